import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))

# TRIAGE_TEST_LISTING=reverse|shuffle: every directory listing in another order than the file
# system's, here and in the Python children the code starts (see listing_order/sitecustomize.py).
if os.environ.get("TRIAGE_TEST_LISTING"):
    _order_dir = str(TESTS / "listing_order")
    sys.path.insert(0, _order_dir)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_order_dir, os.environ.get("PYTHONPATH")) if p)
    import sitecustomize  # noqa: E402,F401  (ours: installs the reordering in this process)

    from console.core.index import pool as _pool  # noqa: E402

    _helper_argv = _pool._helper_argv

    def _reordering_helper_argv(standby: bool = False) -> list[str]:
        # Scan helpers run isolated (-I -S: no site, so no sitecustomize): load ours, then run the
        # helper's script as it would have run.
        argv = _helper_argv(standby)  # [python, -I, -S, scan_helper.py, SYS_PATH_JSON, mode]
        boot = (f"import sys; sys.path.insert(0, {_order_dir!r}); import sitecustomize, runpy; "
                f"sys.argv = {argv[3:]!r}; runpy.run_path({argv[3]!r}, run_name='__main__')")
        return [*argv[:3], "-c", boot]

    _pool._helper_argv = _reordering_helper_argv

    from console.watch import children as _children  # noqa: E402

    _child_argv = _children.child_argv

    def _reordering_child_argv(name: str, cfg: dict) -> list[str]:
        # The watching children run isolated too: [python, -I, -S, child.py, SYS_PATH_JSON, CONFIG_JSON].
        argv = _child_argv(name, cfg)
        boot = (f"import sys; sys.path.insert(0, {_order_dir!r}); import sitecustomize, runpy; "
                f"sys.argv = {argv[3:]!r}; runpy.run_path({argv[3]!r}, run_name='__main__')")
        return [*argv[:3], "-c", boot]

    _children.child_argv = _reordering_child_argv


def pytest_report_header(config):
    mode = os.environ.get("TRIAGE_TEST_LISTING")
    return f"directory listings: {mode} (TRIAGE_TEST_LISTING)" if mode else None


@pytest.fixture(autouse=True)
def _operator_state_dir(tmp_path_factory, monkeypatch):
    """Each test's operator state (the audit anchors) in its own directory, never the real user's."""
    monkeypatch.setenv("TRIAGE_STATE_DIR", str(tmp_path_factory.mktemp("operator-state")))
