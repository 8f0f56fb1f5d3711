"""Site records and the rules of create-site, get-site and get-sites (no state, no locking).

Field names and types follow what public clients of the service parse: the docs' quick start
(get-site: ``atomic_site_id`` int, ``domain_name``, ``db_charset``, ``db_collate``, ``php_version``,
``wp_admin_user``, ``wp_admin_email``; get-sites: ``atomic_site_id`` as a STRING, ``created``,
``space_used``), the Python SDK's ``Site`` model (rtCamp/wp-cloud-atomic-sdk ``atomic_sdk/models.py``:
``wpcom_blog_id``, ``server_pool_id``, ``db_pass``, ``cache_prefix``, ``wp_version``,
``migrate_to_pool``, ``migrate_readonly``, ``photon_subsizes``, ``extra``) and the reference panel
(Automattic/wpcloud-station: ``atomic_client_id``, ``smtp_pass``, ``chroot_path``,
``chroot_ssh_path``, ``site_api_key``, ``static_file_404``). The record holds credentials
(``db_pass``, ``smtp_pass``, ``site_api_key``), as the real one does: clients must not show them.
"""

import copy
import re
import secrets

# Documented create-site enums and defaults (quick start, "Create Site parameters" and "Review site
# defaults"); the PHP list is the docs' get-php-versions example.
PHP_VERSIONS = ("8.2", "8.3", "8.4", "8.5")
DEFAULT_PHP = "8.4"
COLLATIONS = {"latin1": "latin1_swedish_ci", "utf8": "utf8_general_ci", "utf8mb4": "utf8mb4_general_ci"}
DEFAULT_CHARSET = "utf8mb4"
WP_TRACKS = ("latest", "previous", "beta")
DEFAULT_QUOTA = "200G"
SOFTWARE_ACTIONS = ("install", "activate", "deactivate", "remove", "lock", "unlock")
# Datacenter codes (SDK docstring names "dfw" and "bur") and the server pool each one maps to (ours).
GEO_POOLS = {"ams": 21, "bur": 22, "dca": 23, "dfw": 24}
DEFAULT_GEO = "dfw"
# Fields the service documents but the emulator does not model: refused, never silently ignored.
NOT_EMULATED = ("clone_from", "restore_from", "persist_data", "demo_domain")
# The record's credential fields (what clients must never show).
CREDENTIALS = ("db_pass", "smtp_pass", "site_api_key")
# Meta flag spellings accepted for meta[allow_site_migration] (the SDK sends "true").
FLAG_ON, FLAG_OFF = ("true", "1"), ("false", "0")

DOMAIN = re.compile(r"(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]")
ADMIN_USER = re.compile(r"[A-Za-z0-9._@-]{1,60}")
EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
QUOTA = re.compile(r"[1-9][0-9]*[KMGT]?")
META_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")


class FieldError(ValueError):
    """A create-site field broke a rule (the service answers 400 with this text)."""


def domain_used_message(domain):
    # The service's text (docs quick start, "Check for domain collisions").
    return ("Domain name already used [%s]. TXT record verification is required to bypass this check."
            % domain)


def normalize_domain(value):
    """Lower-case host name, or None when it is not one."""
    if not isinstance(value, str):
        return None
    domain = value.strip().lower().rstrip(".")
    return domain if DOMAIN.fullmatch(domain) else None


def _text(params, name, required=False):
    value = params.get(name)
    if value is None:
        if required:
            raise FieldError("Missing required parameter: %s" % name)
        return None
    if not isinstance(value, str):
        raise FieldError("%s must be a single value" % name)
    if required and not value.strip():
        raise FieldError("%s must not be empty" % name)
    return value


def _mapping(params, name):
    value = params.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict) or any(not isinstance(v, str) for v in value.values()):
        raise FieldError("%s must be sent as %s[key]=value pairs" % (name, name))
    return value


def parse_flag(value, name):
    """"true"/"1" -> "true", "false"/"0" -> None; anything else is refused."""
    text = value.strip().lower()
    if text in FLAG_ON:
        return "true"
    if text in FLAG_OFF:
        return None
    raise FieldError("Invalid value for %s: use true or false" % name)


def is_set(value):
    """A site-meta flag such as do_not_delete: set unless absent, empty, "0" or "false"."""
    return value is not None and value.strip().lower() not in ("", "0", "false")


def validate_create(params):
    """Check the create-site form; returns the settings for a new record. Raises FieldError."""
    for name in NOT_EMULATED:
        if name in params:
            raise FieldError("%s is not supported by this emulator" % name)
    domain_text = _text(params, "domain_name", required=True)
    domain = normalize_domain(domain_text)
    if domain is None:
        raise FieldError("Invalid domain_name: %s" % domain_text.strip()[:253])
    user = _text(params, "admin_user", required=True)
    if not ADMIN_USER.fullmatch(user):
        raise FieldError("Invalid admin_user: use 1 to 60 letters, digits and . _ @ - (no spaces)")
    email = _text(params, "admin_email", required=True).strip()
    if not EMAIL.fullmatch(email):
        raise FieldError("Invalid admin_email")
    password = _text(params, "admin_pass")
    if password is not None and not password:
        raise FieldError("admin_pass must not be empty (omit it to have one generated)")
    php = _text(params, "php_version") or DEFAULT_PHP
    if php not in PHP_VERSIONS:
        raise FieldError("Invalid php_version %s: available versions are %s" % (php, ", ".join(PHP_VERSIONS)))
    charset = _text(params, "db_charset") or DEFAULT_CHARSET
    if charset not in COLLATIONS:
        raise FieldError("Invalid db_charset: use one of %s" % ", ".join(COLLATIONS))
    collate = _text(params, "db_collate") or COLLATIONS[charset]
    if collate != COLLATIONS[charset]:
        raise FieldError("db_collate %s does not match db_charset %s (use %s)"
                         % (collate, charset, COLLATIONS[charset]))
    track = _text(params, "wordpress-version") or "latest"
    if track not in WP_TRACKS:
        raise FieldError("Invalid wordpress-version: use one of %s" % ", ".join(WP_TRACKS))
    quota = _text(params, "space_quota") or DEFAULT_QUOTA
    if not QUOTA.fullmatch(quota):
        raise FieldError("Invalid space_quota: use a size such as 50G")
    geo = _text(params, "geo_affinity") or DEFAULT_GEO
    if geo not in GEO_POOLS:
        raise FieldError("Invalid geo_affinity: use one of %s" % ", ".join(sorted(GEO_POOLS)))
    software = _mapping(params, "software")
    for slug, action in software.items():
        if action not in SOFTWARE_ACTIONS:
            raise FieldError("Invalid action for software[%s]: use one of %s" % (slug, ", ".join(SOFTWARE_ACTIONS)))
    meta = dict(_mapping(params, "meta"))
    for key in meta:
        if not META_KEY.fullmatch(key):
            raise FieldError("Invalid meta key: %s" % key[:64])
    allow = None
    if "allow_site_migration" in meta:
        allow = parse_flag(meta.pop("allow_site_migration"), "meta[allow_site_migration]")
    return {"domain": domain, "admin_user": user, "admin_email": email, "php_version": php,
            "db_charset": charset, "db_collate": collate, "wp_version": track, "space_quota": quota,
            "geo_affinity": geo, "software": dict(software), "meta": meta, "allow": allow}


def new_record(site_id, client, created, settings=None):
    """A full internal site record; ``settings`` as validate_create() returns (defaults otherwise)."""
    settings = dict(settings or {})
    domain = settings["domain"]
    geo = settings.get("geo_affinity") or DEFAULT_GEO
    charset = settings.get("db_charset") or DEFAULT_CHARSET
    return {
        "id": site_id, "domain": domain, "client": client, "created": created, "status": "active",
        "allow_site_migration": settings.get("allow"), "meta": dict(settings.get("meta") or {}),
        "admin_user": settings.get("admin_user") or "admin",
        "admin_email": settings.get("admin_email") or "admin@%s" % domain,
        "php_version": settings.get("php_version") or DEFAULT_PHP,
        "wp_version": settings.get("wp_version") or "latest",
        "db_charset": charset, "db_collate": settings.get("db_collate") or COLLATIONS[charset],
        "space_quota": settings.get("space_quota") or DEFAULT_QUOTA, "geo_affinity": geo,
        "software": dict(settings.get("software") or {}), "ondemand_backups": 0,
        "aliases": [], "db_siteurl": domain,  # the host the database's siteurl names (domains.py)
        "db_pass": secrets.token_urlsafe(18), "smtp_pass": secrets.token_urlsafe(18),
        "site_api_key": secrets.token_hex(16),
    }


def complete_record(site, default_client):
    """Fill fields a state file written by an older emulator lacks (in place)."""
    template = new_record(site["id"], site.get("client") or default_client, site.get("created"),
                          {"domain": site["domain"]})
    for key, value in template.items():
        site.setdefault(key, value)
    return site


def meta_value(site, key):
    """What site-meta get (and a get-sites meta segment) answers for one key."""
    if key == "allow_site_migration":
        return site["allow_site_migration"]
    if key in ("php_version", "wp_version", "space_quota", "geo_affinity"):
        return site[key]
    return site["meta"].get(key)


# Record fields site-meta can change, and the keys it cannot write at all.
META_FIELDS = ("php_version", "space_quota")
META_READ_ONLY = {"allow_site_migration": "use site-allow-ssh-migration",
                  "wp_version": "use site-wordpress-version", "geo_affinity": "it is chosen when the site is created"}
SUSPENDED = re.compile(r"[1-5][0-9][0-9]")


def meta_write(key, value, removing=False):
    """Check a site-meta update (or remove); returns (where, value): ``meta`` or the record field to set."""
    if key in META_READ_ONLY:
        doing = "removed" if removing else "updated"
        raise FieldError("%s cannot be %s with site-meta: %s" % (key, doing, META_READ_ONLY[key]))
    if not META_KEY.fullmatch(key):
        raise FieldError("Invalid meta key: %s" % key[:64])
    if key in META_FIELDS and removing:
        raise FieldError("%s cannot be removed, only updated" % key)
    if removing:
        return "meta", None
    if value is None:
        raise FieldError("Missing required parameter: value")
    value = value.strip()
    if key == "php_version" and value not in PHP_VERSIONS:
        raise FieldError("Invalid php_version %s: available versions are %s" % (value, ", ".join(PHP_VERSIONS)))
    if key == "space_quota" and not QUOTA.fullmatch(value):
        raise FieldError("Invalid space_quota: use a size such as 50G")
    if key == "suspended" and not SUSPENDED.fullmatch(value):
        raise FieldError("Invalid suspended: use an HTTP status code such as 503")
    return (key if key in META_FIELDS else "meta"), value


def public_record(site, client_id, extra=False):
    """get-site's data: the full record, credentials included (the service returns them)."""
    record = {
        "atomic_site_id": site["id"], "domain_name": site["domain"], "atomic_client_id": client_id,
        "wpcom_blog_id": 200000000 + site["id"], "server_pool_id": GEO_POOLS[site["geo_affinity"]],
        "db_charset": site["db_charset"], "db_collate": site["db_collate"], "php_version": site["php_version"],
        "wp_version": site["wp_version"], "wp_admin_user": site["admin_user"],
        "wp_admin_email": site["admin_email"], "cache_prefix": "wpc%d_" % site["id"],
        "chroot_path": "/srv/htdocs/%d" % site["id"], "chroot_ssh_path": "/srv/htdocs/%d" % site["id"],
        "static_file_404": site["meta"].get("static_file_404", "wordpress"),
        "migrate_to_pool": None, "migrate_readonly": None, "photon_subsizes": None,
        "db_pass": site["db_pass"], "smtp_pass": site["smtp_pass"], "site_api_key": site["site_api_key"],
        "created": site["created"],
    }
    if extra:
        # allow_site_migration stays out: it is not documented as a get-site field (read it with
        # site-meta get), so clients must not come to depend on it here.
        record["extra"] = {"server_pool": {"server_pool_id": GEO_POOLS[site["geo_affinity"]],
                                           "geo_affinity": site["geo_affinity"]},
                           "meta": copy.deepcopy(site["meta"]), "software": dict(site["software"])}
    return record


def list_item(site, keys):
    """One get-sites entry: the ID as a string (as the docs show), extra meta keys as flat fields."""
    item = {"atomic_site_id": str(site["id"]), "domain_name": site["domain"], "created": site["created"],
            "space_used": "0"}
    for key in keys:
        item[key] = meta_value(site, key)
    return item
