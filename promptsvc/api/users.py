"""Users (people) of the caller's org: create, list, change (Service Admin only).

Users are made and changed by the identity extension; the org is always the token's.
"""

from __future__ import annotations

from typing import Any

from flask import Response, current_app

from identity.roles import SERVICE_ADMIN
from identity.users import created_json
from promptsvc import actions
from promptsvc.api.common import ApiBlueprint, View
from promptsvc.api.responses import UserCreatedSchema, UserListSchema, UserSchema
from promptsvc.auth import current_principal
from promptsvc.http import json_response
from promptsvc.inputs import UserCreateSchema, UserUpdateSchema

blp = ApiBlueprint(
    "users",
    __name__,
    url_prefix="/api/v1/users",
    description="Create, list and change the people (users) of your org.",
)


@blp.route("")
class Users(View):
    @blp.requires(SERVICE_ADMIN)
    @blp.returns(200, UserListSchema)
    def get(self) -> Response:
        """List users

        Every user of the org, disabled ones included, oldest first. Passwords are never
        shown.
        """
        users = actions.list_users(current_app.extensions["identity"], current_principal())
        return json_response({"items": [u.to_json() for u in users]})

    @blp.requires(SERVICE_ADMIN)
    @blp.arguments(UserCreateSchema)
    @blp.returns(201, UserCreatedSchema)
    @blp.errors(409, 413, 415)
    def post(self, body: dict[str, Any]) -> Response:
        """Create a user

        Without a password one is generated and returned in this response only. 409 when
        the username is taken in the org.
        """
        user, generated = actions.create_user(
            current_app.extensions["identity"],
            current_principal(),
            body["username"],
            body["role"],
            body.get("password"),
        )
        return json_response(created_json(user, generated), 201)


@blp.route("/<username>")
class UserItem(View):
    @blp.requires(SERVICE_ADMIN)
    @blp.arguments(UserUpdateSchema)
    @blp.returns(200, UserSchema)
    @blp.errors(404, 413, 415)
    def patch(self, body: dict[str, Any], username: str) -> Response:
        """Change a user

        Change the role, disable or enable, or set a new password; what is left out
        stays. A disabled user can no longer sign in or refresh tokens; access tokens
        already issued live until they expire.
        """
        user = actions.update_user(
            current_app.extensions["identity"],
            current_principal(),
            username,
            role=body.get("role"),
            disabled=body.get("disabled"),
            password=body.get("password"),
        )
        return json_response(user.to_json())
