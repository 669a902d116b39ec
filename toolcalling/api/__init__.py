"""The REST API: views, serializers, permissions, the event stream endpoints and the one error shape."""
