"""Model providers the platform calls itself: OpenAI-compatible chat completions via egress."""

from palaestra.providers.chat import (
    ChatProvider,
    Completion,
    ProviderFailed,
    parse_completion,
    strip_code_fence,
)

__all__ = ["ChatProvider", "Completion", "ProviderFailed", "parse_completion", "strip_code_fence"]
