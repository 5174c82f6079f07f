"""marshmallow schemas of the identity endpoints' forms and answers, for /openapi.json.

The identity package serves these endpoints; promptsvc.api.identity_docs documents them
with these schemas, so that /openapi.json covers every endpoint of the all-in-one app.
"""

from __future__ import annotations

from marshmallow import Schema, fields, validate


class SdkTokenRequestSchema(Schema):
    account_id = fields.String(required=True, metadata={"description": "The org slug"})
    key_id = fields.String(required=True, metadata={"description": "The API key's client_id"})
    key_secret = fields.String(required=True, metadata={"description": "The API key's secret"})


class SdkTokenSchema(Schema):
    access_token = fields.String(metadata={"description": "Signed JWT (RS256)"})
    expires_in = fields.Integer(metadata={"description": "Lifetime in seconds"})
    token_type = fields.String(metadata={"example": "Bearer"})


class TokenFormSchema(Schema):
    grant_type = fields.String(
        required=True,
        validate=validate.OneOf(
            [
                "client_credentials",
                "authorization_code",
                "refresh_token",
                "urn:ietf:params:oauth:grant-type:device_code",
            ]
        ),
    )
    client_id = fields.String(metadata={"description": "Or use HTTP Basic client auth"})
    client_secret = fields.String(
        metadata={"description": "Keys only (or HTTP Basic); public clients send none"}
    )
    scope = fields.String(
        metadata={
            "description": "Space-separated; fewer than the role holds narrows the token. "
            "openid, profile and email are always accepted."
        }
    )
    code = fields.String(metadata={"description": "authorization_code: the code"})
    redirect_uri = fields.String(metadata={"description": "authorization_code: as sent to auth"})
    code_verifier = fields.String(metadata={"description": "authorization_code: PKCE verifier"})
    refresh_token = fields.String(metadata={"description": "refresh_token: the refresh token"})
    device_code = fields.String(metadata={"description": "device_code: from auth/device"})


class OAuthTokenSchema(SdkTokenSchema):
    scope = fields.String(metadata={"description": "Space-separated scopes the token carries"})
    refresh_expires_in = fields.Integer(
        metadata={"description": "Lifetime of refresh_token in seconds; 0 without one"}
    )
    not_before_policy = fields.Integer(
        data_key="not-before-policy", metadata={"description": "Always 0 (Keycloak's field)"}
    )
    refresh_token = fields.String(metadata={"description": "People's flows only; rotates"})
    id_token = fields.String(metadata={"description": "With scope openid, people's flows only"})


class OAuthErrorSchema(Schema):
    error = fields.String(metadata={"description": "RFC 6749 error, e.g. invalid_client"})
    error_description = fields.String()
    code = fields.String(metadata={"description": "Same value as error"})
    message = fields.String(metadata={"description": "Same value as error_description"})


class JwksSchema(Schema):
    keys = fields.List(fields.Dict(), metadata={"description": "Public RSA keys (JWK)"})


class OpenIdConfigurationSchema(Schema):
    issuer = fields.String()
    authorization_endpoint = fields.String()
    token_endpoint = fields.String()
    introspection_endpoint = fields.String()
    userinfo_endpoint = fields.String()
    end_session_endpoint = fields.String()
    jwks_uri = fields.String()
    revocation_endpoint = fields.String()
    device_authorization_endpoint = fields.String()
    registration_endpoint = fields.String()
    grant_types_supported = fields.List(fields.String())
    response_types_supported = fields.List(fields.String())
    response_modes_supported = fields.List(fields.String())
    subject_types_supported = fields.List(fields.String())
    id_token_signing_alg_values_supported = fields.List(fields.String())
    code_challenge_methods_supported = fields.List(fields.String())
    token_endpoint_auth_methods_supported = fields.List(fields.String())
    introspection_endpoint_auth_methods_supported = fields.List(fields.String())
    revocation_endpoint_auth_methods_supported = fields.List(fields.String())
    scopes_supported = fields.List(fields.String())
    claims_supported = fields.List(fields.String())
    request_parameter_supported = fields.Boolean()
    request_uri_parameter_supported = fields.Boolean()


class RealmDocumentSchema(Schema):
    realm = fields.String(metadata={"description": "The org slug"})
    public_key = fields.String(
        metadata={"description": "The current signing key: base64 DER SubjectPublicKeyInfo"}
    )
    token_service = fields.String(data_key="token-service")
    account_service = fields.String(data_key="account-service")
    tokens_not_before = fields.Integer(data_key="tokens-not-before")


class IntrospectionFormSchema(Schema):
    token = fields.String(required=True, metadata={"description": "The token to look at"})
    token_type_hint = fields.String(validate=validate.OneOf(["access_token", "refresh_token"]))
    client_id = fields.String(metadata={"description": "A key of the realm, or HTTP Basic"})
    client_secret = fields.String(metadata={"description": "The key's secret, or HTTP Basic"})


class IntrospectionSchema(Schema):
    active = fields.Boolean(required=True)
    client_id = fields.String(metadata={"description": "The client the token was issued to"})
    username = fields.String(metadata={"description": "People's tokens: the username"})
    token_type = fields.String()
    sub = fields.String()
    scope = fields.String()
    exp = fields.Integer()
    iat = fields.Integer()
    iss = fields.String()


class RevocationFormSchema(Schema):
    token = fields.String(required=True, metadata={"description": "A refresh token"})
    token_type_hint = fields.String(validate=validate.OneOf(["access_token", "refresh_token"]))
    client_id = fields.String(metadata={"description": "The client the token was issued to"})
    client_secret = fields.String(metadata={"description": "Keys only; public clients send none"})


class ClientRegistrationRequestSchema(Schema):
    redirect_uris = fields.List(
        fields.String(),
        required=True,
        metadata={"description": "Loopback (http://127.0.0.1:PORT/...) or https URIs"},
    )
    client_name = fields.String()
    scope = fields.String()
    token_endpoint_auth_method = fields.String(
        metadata={"description": "Ignored: a registered client is public (none)"}
    )
    grant_types = fields.List(
        fields.String(), metadata={"description": "Ignored: authorization_code, refresh_token"}
    )
    response_types = fields.List(fields.String())


class ClientRegistrationSchema(ClientRegistrationRequestSchema):
    client_id = fields.String(metadata={"description": "mcp~...: signed, carries https URIs"})
    client_id_issued_at = fields.Integer()


class UserInfoSchema(Schema):
    sub = fields.String(metadata={"description": "The user id (a key's service account id)"})
    preferred_username = fields.String()
    org = fields.String()
    roles = fields.List(fields.String())


class DeviceAuthorizationFormSchema(Schema):
    client_id = fields.String(required=True, metadata={"example": "promptsvc-cli"})
    scope = fields.String(metadata={"description": "Space-separated; e.g. openid"})


class DeviceAuthorizationSchema(Schema):
    device_code = fields.String(metadata={"description": "Poll the token endpoint with this"})
    user_code = fields.String(metadata={"example": "BCDF-GHJK"})
    verification_uri = fields.String()
    verification_uri_complete = fields.String()
    expires_in = fields.Integer()
    interval = fields.Integer(metadata={"description": "Seconds between polls"})


class LoginFormSchema(Schema):
    username = fields.String(required=True)
    password = fields.String(required=True)
    csrf_token = fields.String(required=True, metadata={"description": "From the page's form"})


class DeviceFormSchema(Schema):
    csrf_token = fields.String(required=True, metadata={"description": "From the page's form"})
    user_code = fields.String()
    action = fields.String(validate=validate.OneOf(["lookup", "approve", "deny"]))
    username = fields.String(metadata={"description": "Signing in first"})
    password = fields.String(metadata={"description": "Signing in first"})


class LogoutFormSchema(Schema):
    client_id = fields.String()
    refresh_token = fields.String(
        metadata={"description": "A client's logout (Keycloak's): ends that token's session"}
    )
    id_token_hint = fields.String()
    post_logout_redirect_uri = fields.String()
    state = fields.String()
    csrf_token = fields.String(metadata={"description": "The confirmation page's form"})
