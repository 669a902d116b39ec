"""Other frontends' protocols over the app's turns and event stream: the Vercel AI SDK's UI message stream
(``useChat``) and AG-UI. Only the views are public; they sit beside the REST API in ``toolcalling.urls``."""

from .views import AGUIMessagesView, AGUIView, AISDKChatView, AISDKMessagesView, AISDKStreamView

__all__ = ["AGUIMessagesView", "AGUIView", "AISDKChatView", "AISDKMessagesView", "AISDKStreamView"]
