"""Tests for the headless `triage` commands (console.cli): ls, show, classify."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from console.cli import main
from console.core import taxonomy as tx
from console.core.formats import stage as stage_fmt

REPO = Path(__file__).resolve().parent.parent
DOCUMENTED_KEYS = {
    "id", "root", "path", "run", "node", "format", "status", "error", "class", "route", "retryable",
    "confidence", "gate", "next_action", "evidence", "fingerprint", "warnings",
}
RUN = "r-20261128-1120-orders-v1-endpoint"


def write(root, rel: str, data) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")
    return path


def stage(failure_type: str, role: str = "code", **kw) -> dict:
    data = {
        "failure_type": failure_type,
        "retryable": "true" if failure_type in stage_fmt.RETRYABLE else "false",
        "next_action": stage_fmt.NEXT_ACTION[failure_type].format(role=role, agent="codex"),
        "role": role, "agent": "codex", "exit_code": 1, "attempt": 1,
        "stderr_tail": "FAILED tests/test_orders.py::test_create - AssertionError: 201 != 400",
    }
    data.update(kw)
    return data


def no_gate_tree(root) -> None:
    write(root, f"{RUN}/FAILURE.json", stage("test_failed"))
    write(root, f"{RUN}/runtime/registry-econnreset.json",
          {"kind": "tool", "message": "fetch https://registry.npmjs.org/zod failed: ECONNRESET", "retryable": True})


def gate_tree(root) -> None:
    no_gate_tree(root)
    write(root, "r-20261129-0412-auth-refactor/FAILURE.json", stage(
        "confirmation_required", role="deploy", exit_code=3, request_id="req-20261129-0447-c81d",
        confirm_prompt="Rotate prod JWT signing key in Vault"))


def invoke(*args: str, input: str | bytes | None = None):
    return CliRunner().invoke(main, list(args), input=input)


def run_module(*args: str, input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console", *args], input=input, capture_output=True,
                          cwd=REPO, timeout=60)


# --------------------------------------------------------------------------- ls

def test_ls_sample_runs_json_covers_every_format_gate_and_status():
    proc = run_module("ls", "sample_runs", "--json")  # the README's command, from the repository root
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert isinstance(data, list) and data
    formats = {f["format"] for f in data}
    assert {"stage", "classifier", "orchestrator", "runtime", "attribution", "raw"} <= formats
    assert set(tx.GATES) <= {f["gate"] for f in data if f["gate"]}
    statuses = {f["status"] for f in data}
    assert {"error", "incomplete"} <= statuses
    for f in data:
        assert DOCUMENTED_KEYS <= f.keys(), f["path"]
        assert f["route"] in tx.ROUTES
        assert all({"text", "source"} <= e.keys() for e in f["evidence"])
        if f["status"] == "error":
            assert f["error"]


def test_ls_table_lists_findings(tmp_path):
    no_gate_tree(tmp_path)
    result = invoke("ls", str(tmp_path), "--table")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("RUN")
    assert len(lines) == 3
    assert any("test_failed" in line for line in lines)


def test_ls_needs_human_exits_1_when_gates_exist(tmp_path):
    gate_tree(tmp_path)
    result = invoke("ls", str(tmp_path), "--needs-human", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert [f["gate"] for f in data] == ["confirm"]
    table = invoke("ls", str(tmp_path), "--needs-human")
    assert table.exit_code == 1
    assert "confirmation_required" in table.stdout


def test_ls_needs_human_exits_0_without_gates(tmp_path):
    no_gate_tree(tmp_path)
    result = invoke("ls", str(tmp_path), "--needs-human")
    assert result.exit_code == 0
    assert invoke("ls", str(tmp_path), "--needs-human", "--json").stdout.strip() == "[]"


def test_ls_route_filter(tmp_path):
    gate_tree(tmp_path)
    data = json.loads(invoke("ls", str(tmp_path), "--json", "--route", "retry").stdout)
    assert [f["path"] for f in data] == [f"{RUN}/runtime/registry-econnreset.json"]
    assert all(f["route"] == "retry" for f in data)
    everything = json.loads(invoke("ls", str(tmp_path), "--json").stdout)
    assert len(everything) == 3


def test_ls_class_filter(tmp_path):
    gate_tree(tmp_path)
    data = json.loads(invoke("ls", str(tmp_path), "--json", "--class", "test_failed").stdout)
    assert [f["class"] for f in data] == ["test_failed"]


def test_ls_bad_route_is_usage_error(tmp_path):
    result = invoke("ls", str(tmp_path), "--route", "sideways")
    assert result.exit_code == 2


def test_ls_missing_root_reports_it(tmp_path):
    """A mistyped root is exit 2 with the reason, never an empty list that reads as "nothing to do"."""
    missing = tmp_path / "nope"
    result = invoke("ls", str(missing), "--json")
    assert result.exit_code == 2
    error = json.loads(result.stdout)
    assert error["schema"] == "triage-error/v1" and str(missing) in error["error"] and "does not exist" in error["error"]
    assert str(missing) in result.stderr


# --------------------------------------------------------------------------- show

def test_show_by_id_json(tmp_path):
    gate_tree(tmp_path)
    listed = json.loads(invoke("ls", str(tmp_path), "--json").stdout)
    target = next(f for f in listed if f["gate"] == "confirm")
    result = invoke("show", target["id"], "--root", str(tmp_path), "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["id"] == target["id"]
    assert shown["path"] == "r-20261129-0412-auth-refactor/FAILURE.json"
    assert shown["request_id"] == "req-20261129-0447-c81d"
    assert shown["fingerprint_seen"]["times"] == 1


def test_show_by_path(tmp_path):
    gate_tree(tmp_path)
    path = tmp_path / RUN / "runtime" / "registry-econnreset.json"
    result = invoke("show", str(path))
    assert result.exit_code == 0, result.output
    assert f"{RUN}/runtime/registry-econnreset.json" in result.stdout
    assert "class tool (runtime)" in result.stdout
    assert "route retry" in result.stdout


def test_show_by_relative_path(tmp_path, monkeypatch):
    gate_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = invoke("show", f"{RUN}/FAILURE.json", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["class"] == "test_failed"


def test_show_by_path_json_has_same_id_as_ls(tmp_path):
    gate_tree(tmp_path)
    listed = {f["path"]: f["id"] for f in json.loads(invoke("ls", str(tmp_path), "--json").stdout)}
    result = invoke("show", str(tmp_path / RUN / "FAILURE.json"), "--json")
    assert json.loads(result.stdout)["id"] == listed[f"{RUN}/FAILURE.json"]


def test_show_unknown_id_exits_2_without_traceback(tmp_path):
    gate_tree(tmp_path)
    result = invoke("show", "nosuchid", "--root", str(tmp_path))
    assert result.exit_code == 2
    assert "no finding" in result.stderr
    proc = run_module("show", "nosuchid", "--root", str(tmp_path))
    assert proc.returncode == 2
    assert b"Traceback" not in proc.stdout + proc.stderr
    assert b"nosuchid" in proc.stderr


# --------------------------------------------------------------------------- classify

def test_classify_json_from_stdin():
    event = {"exit_code": 130, "stderr_tail": "^C", "role": "code"}
    result = invoke("classify", "--json", input=json.dumps(event))
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["failure_type"], data["route"], data["retryable"]) == ("interrupted", "retry", True)  # the runner's table
    # the runtime's view beside it, never "cancelled" with retryable true
    assert data["runtime"] == {"kind": "cancelled", "retryable": False}
    assert len(data["fingerprint"]) == 64


def test_classify_never_puts_unknown_or_cancelled_beside_a_runtime_retryable():
    for event in ({"exit_code": 1, "stderr_tail": "the widget did a strange thing"}, {"exit_code": 130, "stderr_tail": "^C"},
                  {"exit_code": 1, "stderr_tail": "x", "kind": "unknown"}, {"exit_code": 1, "stderr_tail": "x", "kind": "cancelled"}):
        runtime = json.loads(invoke("classify", "--json", input=json.dumps(event)).stdout)["runtime"]
        assert runtime["kind"] in ("unknown", "cancelled") and runtime["retryable"] is False, (event, runtime)


def test_classify_says_when_no_rule_matched():
    result = invoke("classify", input=json.dumps({"exit_code": 1, "stderr_tail": "the widget did a strange thing"}))
    assert "no rule matched" in result.stdout and "confidence 0.3" in result.stdout


def test_classify_json_with_node_adds_the_classifier_verdict():
    event = {"exit_code": 1, "stderr_tail": "npm ERR! network read ECONNRESET",
             "node": {"id": "TASK-1", "parent_id": "STORY-1", "failed_attempts": 1}}
    data = json.loads(invoke("classify", "--json", input=json.dumps(event)).stdout)
    assert data["classifier"]["class"] == "F1"


def test_classify_text_output():
    event = {"exit_code": 127, "stderr_tail": "bash: kimi: command not found", "role": "plan", "agent": "kimi"}
    result = invoke("classify", input=json.dumps(event))
    assert result.exit_code == 0
    assert "failure_type agent_missing" in result.stdout
    assert "Install or expose agent command kimi" in result.stdout


def test_classify_jsonl_mixed_lines(tmp_path):
    lines = [
        json.dumps({"exit_code": 1, "stderr_tail": "ssh: connect to host build-02 port 22: Connection refused"}),
        '{"exit_code": 1, "stderr_tail": oops}',
        json.dumps({"exit_code": 1, "role": "code"}),
    ]
    src = write(tmp_path, "events.jsonl", "\n".join(lines) + "\n")
    result = invoke("classify", str(src), "--jsonl")
    assert result.exit_code == 2
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(out) == 3
    assert out[0]["failure_type"] == "remote_unreachable" and "error" not in out[0]
    assert out[1]["line"] == 2 and "error" in out[1]
    assert out[2]["line"] == 3 and "stderr_tail" in out[2]["error"]


def test_classify_jsonl_all_good_exits_0():
    lines = [json.dumps({"exit_code": 0, "stderr_tail": ""}), json.dumps({"exit_code": 130, "stderr_tail": "^C"})]
    result = invoke("classify", "--jsonl", input="\n".join(lines) + "\n")
    assert result.exit_code == 0
    assert [json.loads(x)["route"] for x in result.stdout.splitlines()] == ["none", "retry"]


def test_classify_missing_file_exits_2_without_traceback(tmp_path):
    proc = run_module("classify", str(tmp_path / "no-such-event.json"))
    assert proc.returncode == 2
    assert b"Traceback" not in proc.stdout + proc.stderr
    assert b"cannot read" in proc.stderr


@pytest.mark.parametrize("payload", [b"{not json", b"[1, 2]", b'{"stderr_tail": "boom"}'])
def test_classify_bad_input_exits_2(payload):
    result = invoke("classify", "--json", input=payload)
    assert result.exit_code == 2
    assert "cannot classify" in result.stderr
    assert result.stdout == ""


def test_module_entry_point_lists_a_tree(tmp_path):
    gate_tree(tmp_path)
    proc = run_module("ls", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)) == 3

