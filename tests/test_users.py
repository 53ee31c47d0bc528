"""Who is asking: API key table, the user field, and naming an adapter."""

from __future__ import annotations

import pytest

from clawgym.serve.users import AccessDenied, UserDirectory


def auth(key):
    return {"Authorization": f"Bearer {key}"}


def test_keys_decide_the_user_and_unknown_keys_get_401():
    users = UserDirectory({"k-alice": "alice", "k-bob": "bob"}, admin_key="k-admin")
    assert users.identify(auth("k-alice"), {"user": "bob"}) == "alice"  # the key wins over the body
    for headers in (auth("k-mallory"), {}, {"Authorization": "Basic x"}):
        with pytest.raises(AccessDenied) as denied:
            users.identify(headers, {})
        assert denied.value.status == 401


def test_naming_someone_elses_adapter_is_403_unless_admin():
    users = UserDirectory({"k-alice": "alice", "k-bob": "bob"}, admin_key="k-admin")
    assert users.identify(auth("k-alice"), {"model": "adapter:alice"}) == "alice"
    with pytest.raises(AccessDenied) as denied:
        users.identify(auth("k-alice"), {"model": "adapter:bob"})
    assert denied.value.status == 403 and "bob" in str(denied.value)
    assert users.identify(auth("k-admin"), {"model": "adapter:bob"}) == "bob"
    assert users.is_admin(auth("k-admin")) and not users.is_admin(auth("k-alice"))


def test_without_keys_the_user_field_decides():
    users = UserDirectory()
    assert users.identify({}, {"user": "carol"}) == "carol"
    assert users.identify({}, {}) == "default"
    assert users.identify({}, {"model": "smollm2-135m"}) == "default"  # an ordinary model name selects nothing
    for bad in ({"user": "../../etc"}, {"user": 5}):
        with pytest.raises(AccessDenied) as denied:
            users.identify({}, bad)
        assert denied.value.status == 400


def test_a_bad_key_table_is_refused_at_startup():
    with pytest.raises(ValueError, match="invalid user id"):
        UserDirectory({"k": "no spaces allowed"})


def test_without_a_table_the_shared_key_is_still_required():
    users = UserDirectory(admin_key="k-admin", shared_key="k-shared")
    assert users.identify(auth("k-shared"), {"user": "dave"}) == "dave"
    assert users.identify(auth("k-admin"), {}) == "default"
    with pytest.raises(AccessDenied) as denied:
        users.identify(auth("k-wrong"), {"user": "dave"})
    assert denied.value.status == 401
