"""The playbook of test_rel_secrets.py::test_modules_success_and_failure_paths_leak_nothing.

Kept as text and written out at run time: it uses the test-only action emulator_hook (the integration
targets', tests/integration/targets/setup_emulator/action_plugins) and ignore_errors on purpose, so it is
not a playbook for ansible-lint or --syntax-check runs.
"""

SECRETS_MODULES = r"""---
# Every module through success and failure paths with canary secrets (tests/reliability/test_rel_secrets.py).
# Variables: rel_* from the test (sites, emulator), canary_* from an input vars file (-e @file).
- name: Modules with canary secrets (action plugins in the controller)
  hosts: localhost
  gather_facts: false
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: "{{ rel_api_url }}"
      api_key: "{{ canary_api_key }}"
      ca_path: "{{ rel_ca_path }}"
      retries: 2
      retry_timeout: 20
      # A write whose answer is lost is read back once it can no longer arrive (timeout + 2 s): with the
      # default 30 s each such wait took 32 s (eight of them for the 502s on client_meta.add). 8 s is still
      # far above an answer's time on a loaded machine, so that only the injected faults are in doubt.
      timeout: 8
  tasks:
    - name: Allow migrations (write)
      wpcloud.hosting.site_allow_migration:
        site: "{{ item }}"
        confirm_overwrite: true
      loop: "{{ rel_sites_allow }}"
      diff: true

    - name: Create with remote_pass
      wpcloud.hosting.migration:
        site: "{{ rel_site_pw }}"
        remote_host: src.example
        remote_user: wp
        remote_pass: "{{ canary_remote_pass }}"
        state_file: "{{ rel_state_dir }}/{{ rel_site_pw }}.json"
      register: created_pw
      diff: true

    - name: Update sending remote_pass again (update_secret always), diff
      wpcloud.hosting.migration:
        site: "{{ rel_site_pw }}"
        remote_host: src.example
        remote_user: wp
        remote_port: 2222
        remote_pass: "{{ canary_remote_pass }}"
        update_secret: always
        state_file: "{{ rel_state_dir }}/{{ rel_site_pw }}.json"
      diff: true

    - name: Check mode with remote_pass
      wpcloud.hosting.migration:
        site: "{{ rel_site_pw }}"
        remote_host: src2.example
        remote_user: wp
        remote_pass: "{{ canary_remote_pass }}"
        update_secret: always
      check_mode: true
      diff: true

    - name: Read the record
      wpcloud.hosting.migration_info:
        site: "{{ rel_site_pw }}"

    - name: Preflight and wait, all messages
      wpcloud.hosting.migration_preflight:
        migration_id: "{{ created_pw.migration_id }}"
        messages: always
      register: preflight_pw

    - name: Run and wait, all messages
      wpcloud.hosting.migration_ready:
        migration_id: "{{ created_pw.migration_id }}"
        messages: always
      register: ready_pw

    - name: Wait on both tickets again, all messages
      wpcloud.hosting.response_ticket_wait:
        ticket_ids:
          - "{{ preflight_pw.ticket_id }}"
          - "{{ ready_pw.ticket_id }}"
        messages: always

    - name: Create with an OpenSSH key
      wpcloud.hosting.migration:
        site: "{{ rel_site_key }}"
        remote_host: src.example
        remote_user: wp
        ssh_id: "{{ canary_ssh_id }}"
      diff: true

    - name: Create with a protected key and its passphrase
      wpcloud.hosting.migration:
        site: "{{ rel_site_kp }}"
        remote_host: src.example
        remote_user: wp
        ssh_id: "{{ canary_ssh_id_protected }}"
        ssh_id_pass: "{{ canary_ssh_id_pass }}"
      diff: true
      register: created_kp

    - name: Update the protected key (always), diff
      wpcloud.hosting.migration:
        migration_id: "{{ created_kp.migration_id }}"
        ssh_id: "{{ canary_ssh_id_protected }}"
        ssh_id_pass: "{{ canary_ssh_id_pass }}"
        update_secret: always
      diff: true

    - name: Create with a PEM key
      wpcloud.hosting.migration:
        site: "{{ rel_site_pem }}"
        remote_host: src.example
        remote_user: wp
        ssh_id: "{{ canary_ssh_id_pem }}"

    # A credential known to differ from the one last sent (issue 40): on_create refuses it, when_changed sends it.
    - name: Create with a first password (not a canary), kept in the state file
      wpcloud.hosting.migration:
        site: "{{ rel_site_chg }}"
        remote_host: src.example
        remote_user: wp
        remote_pass: "first-password-{{ rel_site_chg }}"
        state_file: "{{ rel_state_dir }}/{{ rel_site_chg }}.json"

    - name: "FAIL: the corrected password with update_secret on_create (known to differ)"
      wpcloud.hosting.migration:
        site: "{{ rel_site_chg }}"
        remote_host: src.example
        remote_user: wp
        remote_pass: "{{ canary_remote_pass }}"
        update_secret: on_create
        state_file: "{{ rel_state_dir }}/{{ rel_site_chg }}.json"
      ignore_errors: true

    - name: The corrected password, sent as known to differ (when_changed), diff
      wpcloud.hosting.migration:
        site: "{{ rel_site_chg }}"
        remote_host: src.example
        remote_user: wp
        remote_pass: "{{ canary_remote_pass }}"
        state_file: "{{ rel_state_dir }}/{{ rel_site_chg }}.json"
      diff: true

    - name: The same password without a state file (nothing to compare with, warned)
      wpcloud.hosting.migration:
        site: "{{ rel_site_chg }}"
        remote_pass: "{{ canary_remote_pass }}"

    - name: Create with an OpenSSH key, kept in the state file
      wpcloud.hosting.migration:
        site: "{{ rel_site_chgkey }}"
        remote_host: src.example
        remote_user: wp
        ssh_id: "{{ canary_ssh_id }}"
        state_file: "{{ rel_state_dir }}/{{ rel_site_chgkey }}.json"

    - name: "FAIL: a replaced key with update_secret on_create (known to differ)"
      wpcloud.hosting.migration:
        site: "{{ rel_site_chgkey }}"
        remote_host: src.example
        remote_user: wp
        ssh_id: "{{ canary_ssh_id_pem }}"
        update_secret: on_create
        state_file: "{{ rel_state_dir }}/{{ rel_site_chgkey }}.json"
      ignore_errors: true

    - name: The replaced key, sent as known to differ (when_changed), check mode and diff
      wpcloud.hosting.migration:
        site: "{{ rel_site_chgkey }}"
        remote_host: src.example
        remote_user: wp
        ssh_id: "{{ canary_ssh_id_pem }}"
        state_file: "{{ rel_state_dir }}/{{ rel_site_chgkey }}.json"
      check_mode: true
      diff: true

    - name: The replaced key, sent as known to differ (when_changed), diff
      wpcloud.hosting.migration:
        site: "{{ rel_site_chgkey }}"
        remote_host: src.example
        remote_user: wp
        ssh_id: "{{ canary_ssh_id_pem }}"
        state_file: "{{ rel_state_dir }}/{{ rel_site_chgkey }}.json"
      diff: true

    - name: Preflight that fails (auth), all messages and diagnosis
      wpcloud.hosting.migration:
        site: "{{ rel_site_fail }}"
        remote_host: authfail.example
        remote_user: wp
        remote_pass: "{{ canary_remote_pass }}"
      register: created_fail

    - name: "FAIL: preflight of the failing source"
      wpcloud.hosting.migration_preflight:
        migration_id: "{{ created_fail.migration_id }}"
        messages: always
      ignore_errors: true

    - name: Set the webhook signing key
      wpcloud.hosting.client_meta:
        client: "{{ rel_client }}"
        key: webhook_hmac_key
        secret_value: "{{ canary_webhook_hmac_key }}"
      diff: true

    - name: Set the webhook signing key again (always), check mode
      wpcloud.hosting.client_meta:
        client: "{{ rel_client }}"
        key: webhook_hmac_key
        secret_value: "{{ canary_webhook_hmac_key }}"
        update_secret: always
      check_mode: true
      diff: true

    - name: Set the webhook URL
      wpcloud.hosting.client_meta:
        client: "{{ rel_client }}"
        key: webhook_url
        value: https://hooks.example.com/wpcloud
      diff: true

    # ------------------------------------------------------------------ failure paths
    - name: "FAIL: hmac key passed in value"
      wpcloud.hosting.client_meta:
        client: "{{ rel_client }}"
        key: webhook_hmac_key
        value: "{{ canary_webhook_hmac_key }}"
      ignore_errors: true

    - name: "FAIL: hmac key too weak (the canary's first 20 characters)"
      wpcloud.hosting.client_meta:
        client: "{{ rel_client }}"
        key: webhook_hmac_key
        secret_value: "{{ canary_webhook_hmac_key[:20] }}"
      ignore_errors: true

    - name: "FAIL: an API key that contains the real one"
      wpcloud.hosting.migration_info:
        api_key: "{{ canary_api_key }}x"
        site: "{{ rel_site_pw }}"
      ignore_errors: true

    - name: "FAIL: the API key in api_url credentials"
      wpcloud.hosting.migration_info:
        api_url: "{{ rel_emulator_url | replace('https://', 'https://partner:' ~ canary_api_key ~ '@') }}"
        ca_path: /etc/ssl/certs/ca-certificates.crt
        site: "{{ rel_site_pw }}"
        retries: 0
        timeout: 5
      ignore_errors: true

    - name: "FAIL: wrong passphrase"
      wpcloud.hosting.migration:
        site: "{{ rel_site_new1 }}"
        remote_host: src.example
        remote_user: wp
        ssh_id: "{{ canary_ssh_id_protected }}"
        ssh_id_pass: "{{ canary_ssh_id_pass }}wrong"
      ignore_errors: true

    - name: "FAIL: passphrase for a key without one"
      wpcloud.hosting.migration:
        site: "{{ rel_site_new1 }}"
        remote_host: src.example
        remote_user: wp
        ssh_id: "{{ canary_ssh_id }}"
        ssh_id_pass: "{{ canary_ssh_id_pass }}"
      ignore_errors: true

    - name: "FAIL: protected key without its passphrase"
      wpcloud.hosting.migration:
        site: "{{ rel_site_new1 }}"
        remote_host: src.example
        remote_user: wp
        ssh_id: "{{ canary_ssh_id_protected }}"
      ignore_errors: true

    - name: "FAIL: a password passed as ssh_id (not a key)"
      wpcloud.hosting.migration:
        site: "{{ rel_site_new1 }}"
        remote_host: src.example
        remote_user: wp
        ssh_id: "{{ canary_remote_pass }}"
      ignore_errors: true

    - name: "FAIL: a truncated key"
      wpcloud.hosting.migration:
        site: "{{ rel_site_new1 }}"
        remote_host: src.example
        remote_user: wp
        ssh_id: "{{ canary_ssh_id_pem[:700] }}"
      ignore_errors: true

    - name: "FAIL: password and key together"
      wpcloud.hosting.migration:
        site: "{{ rel_site_new1 }}"
        remote_host: src.example
        remote_user: wp
        remote_pass: "{{ canary_remote_pass }}"
        ssh_id: "{{ canary_ssh_id }}"
      ignore_errors: true

    - name: "FAIL: the password in remote_host"
      wpcloud.hosting.migration:
        site: "{{ rel_site_new1 }}"
        remote_host: "{{ canary_remote_pass }};"
        remote_user: wp
        remote_pass: "{{ canary_remote_pass }}"
      ignore_errors: true

    - name: Inject faults on every write (503 create/update, reset after allow, 500 client meta)
      emulator_hook:
        url: "{{ rel_emulator_url }}"
        ca_path: "{{ rel_ca_path }}"
        path: faults
        method: POST
        body:
          rules:
            - {endpoint: migration.create, reset: after, count: 1}
            - {endpoint: migration.update, status: 503}
            - {endpoint: client_meta.update, status: 500}
            - {endpoint: client_meta.add, status: 502}
            - {endpoint: migration.preflight, reset: before, count: 1}
            - {endpoint: migration.get, status: 429, retry_after: 1, count: 1}
            - {endpoint: site_meta.get, latency: 0.3, count: 2}

    - name: "RESOLVED: create whose answer is lost (reset after), read back"
      wpcloud.hosting.migration:
        site: "{{ rel_site_new2 }}"
        remote_host: src.example
        remote_user: wp
        remote_pass: "{{ canary_remote_pass }}"
      ignore_errors: true

    - name: Re-run finds it (read after the 429 is retried)
      wpcloud.hosting.migration:
        site: "{{ rel_site_new2 }}"
        remote_host: src.example
        remote_user: wp
        remote_pass: "{{ canary_remote_pass }}"
      register: found_new2

    - name: "FAIL: update answered 503 (effect unknown)"
      wpcloud.hosting.migration:
        site: "{{ rel_site_pw }}"
        remote_host: src.example
        remote_user: wp
        remote_pass: "{{ canary_remote_pass }}"
        update_secret: always
      ignore_errors: true

    - name: "FAIL: key update answered 503"
      wpcloud.hosting.migration:
        migration_id: "{{ created_kp.migration_id }}"
        ssh_id: "{{ canary_ssh_id_protected }}"
        ssh_id_pass: "{{ canary_ssh_id_pass }}"
        update_secret: always
      ignore_errors: true

    - name: "RESOLVED: preflight reset before processing, read and sent again"
      wpcloud.hosting.migration_preflight:
        migration_id: "{{ found_new2.migration_id }}"
      ignore_errors: true

    - name: "FAIL: hmac key update answered 500"
      wpcloud.hosting.client_meta:
        client: "{{ rel_client }}"
        key: webhook_hmac_key
        secret_value: "{{ canary_webhook_hmac_key }}"
        update_secret: always
      ignore_errors: true

    - name: Remove the hmac key (answer reset after processing)
      emulator_hook:
        url: "{{ rel_emulator_url }}"
        ca_path: "{{ rel_ca_path }}"
        path: faults
        method: POST
        body:
          rules:
            - {endpoint: client_meta.remove, reset: after, count: 1}
            - {endpoint: migration.ready, status: 504, count: 1}
            - {endpoint: client_meta.add, status: 502}

    - name: "RESOLVED: remove with the answer lost, read back"
      wpcloud.hosting.client_meta:
        client: "{{ rel_client }}"
        key: webhook_hmac_key
        state: absent
      ignore_errors: true

    - name: "RESOLVED: ready answered 504, read and sent again"
      wpcloud.hosting.migration_ready:
        migration_id: "{{ created_pw.migration_id }}"
        require_preflight: false
      ignore_errors: true

    # Every send is answered 502, so each is in doubt for the request timeout + 2 s before a read may
    # prove it absent, eight sends in all: 3 s instead of the play's 8 s takes 40 s instead of 80. What
    # is tested (the failure path leaks nothing) is the same; the 502s answer at once.
    - name: "FAIL: hmac key add answered 502 (key absent now)"
      wpcloud.hosting.client_meta:
        client: "{{ rel_client }}"
        key: webhook_hmac_key
        secret_value: "{{ canary_webhook_hmac_key }}"
        timeout: 3
      ignore_errors: true

    - name: Clear the faults
      emulator_hook:
        url: "{{ rel_emulator_url }}"
        ca_path: "{{ rel_ca_path }}"
        path: faults
        method: POST
        body: {rules: []}

- name: Modules with canary secrets (classic module processes)
  hosts: localhost
  gather_facts: false
  vars:
    wpcloud_hosting_execution: module
  module_defaults:
    group/wpcloud.hosting.all:
      api_url: "{{ rel_api_url }}"
      api_key: "{{ canary_api_key }}"
      ca_path: "{{ rel_ca_path }}"
      retries: 1
  tasks:
    - name: "MODULE: create with a protected key"
      wpcloud.hosting.migration:
        site: "{{ rel_site_mod }}"
        remote_host: src.example
        remote_user: wp
        ssh_id: "{{ canary_ssh_id_protected }}"
        ssh_id_pass: "{{ canary_ssh_id_pass }}"
      diff: true

    - name: "MODULE: update with a password (always)"
      wpcloud.hosting.migration:
        site: "{{ rel_site_mod }}"
        remote_host: src.example
        remote_user: wp
        remote_pass: "{{ canary_remote_pass }}"
        update_secret: always
      diff: true

    - name: "MODULE FAIL: wrong passphrase"
      wpcloud.hosting.migration:
        site: "{{ rel_site_mod }}"
        remote_host: src.example
        remote_user: wp
        ssh_id: "{{ canary_ssh_id_protected }}"
        ssh_id_pass: "{{ canary_remote_pass }}"
      ignore_errors: true

    - name: "MODULE: hmac key"
      wpcloud.hosting.client_meta:
        client: "{{ rel_client }}"
        key: webhook_hmac_key
        secret_value: "{{ canary_webhook_hmac_key }}"
      diff: true

    - name: "MODULE FAIL: API key that contains the real one"
      wpcloud.hosting.migration_info:
        api_key: "{{ canary_api_key }}x"
        site: "{{ rel_site_mod }}"
      ignore_errors: true
"""
