"""The promptsvc Python SDK (docs/api.md section 13).

```python
from promptsvc.client import PromptClient

with PromptClient("http://localhost:8000", account_id="demo", key_id="...",
                  key_secret="...") as client:
    print(client.get_prompt_version("greeting").render(name="Ada"))
```
"""

from __future__ import annotations

from promptsvc.client.async_ import AsyncPromptClient
from promptsvc.client.auth import (
    ClientCredentialsProvider,
    RefreshTokenProvider,
    SdkTokenProvider,
    TokenProvider,
)
from promptsvc.client.errors import (
    AuthenticationError,
    InvalidResponseError,
    NoProductionVersionError,
    NotFoundError,
    PermissionDeniedError,
    PromptServiceError,
    ServerError,
    TransportError,
)
from promptsvc.client.model_config import ModelConfig, ModelParams, ResponseFormat, Tool
from promptsvc.client.models import PromptVersion, Rollout
from promptsvc.client.sync import PromptClient
from promptsvc.templating.template import MissingVariableError, TemplateError, TemplateProblem

__all__ = [
    "AsyncPromptClient",
    "AuthenticationError",
    "ClientCredentialsProvider",
    "InvalidResponseError",
    "MissingVariableError",
    "ModelConfig",
    "ModelParams",
    "NoProductionVersionError",
    "NotFoundError",
    "PermissionDeniedError",
    "PromptClient",
    "PromptServiceError",
    "PromptVersion",
    "RefreshTokenProvider",
    "ResponseFormat",
    "Rollout",
    "SdkTokenProvider",
    "ServerError",
    "TemplateError",
    "TemplateProblem",
    "TokenProvider",
    "Tool",
    "TransportError",
]
