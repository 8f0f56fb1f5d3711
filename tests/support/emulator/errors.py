"""The service's refusals: the exception every endpoint raises, and the statuses chosen where the docs show only
a message (docs/api-choices.md)."""


class ApiError(Exception):
    """A refusal: the HTTP layer answers ``status`` with ``{"message": message, "data": data}``."""

    def __init__(self, status, message, data=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.data = [] if data is None else data


# Status of a create-site (or a domain switch, an alias) refused for a domain already in use: not documented
# (the docs show only the message); 400 like the service's other refusals of a request's fields, not 409,
# which the docs keep for "another operation is running" and which clients may retry.
DOMAIN_USED_STATUS = 400
# Writes refused on a site another operation holds (provisioning, deletion, a running migration, a restore,
# a domain switch): the docs' "423: site locked by another operation".
LOCKED_STATUS = 423
