"""Outgoing webhook deliveries of the emulator (placeholder interface).

The emulator calls only this interface; the delivery itself (HTTPS POST to the client's
webhook_url, signature object when webhook_hmac_key is set, up to two more attempts after a
non-200) is implemented here.
"""


class WebhookSender:
    """Sends events for one emulator instance. Non-blocking: emit() queues and returns."""

    def __init__(self, get_client_meta, ca_path=None, retry_delay=1.0):
        # get_client_meta(client, key) -> str or None, read at delivery time
        self.get_client_meta = get_client_meta
        self.ca_path = ca_path
        self.retry_delay = retry_delay
        self.deliveries = []  # what was sent: event, attempt, status (never the key)

    def emit(self, client, event, atomic_site_id=None, data=None):
        """Queue one event for the client's webhook_url; no-op when no URL is set."""

    def close(self):
        """Stop the delivery thread after the queue drains (bounded)."""
