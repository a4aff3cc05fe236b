"""Keys, allowed_signers, a policy and settings in a temporary directory, for decision tests."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from console.core.config import load_policy, load_settings
from console.core.index import FindingIndex, sample_runs_dir

CONFIRM_RUN = "r-20261129-0412-auth-refactor"
CONFIRM = f"{CONFIRM_RUN}/FAILURE.json"  # confirmation_required, role deploy, agent claude
ESCALATION = "r-20261128-1120-orders-v1-endpoint/reports/phase-3-CodeReviewer-attempt-1.json"
HOLD = "2026-11-28-org-run-7f3a-benchmark-report/nodes/nr-7f3a-validator-reflection/attempt-3.json"
RESUME = "r-20261128-1730-payments-webhooks/FAILURE.json"
WORKTREE = "2026-11-28-feishu-github-projects-sync/FAILURE.json"
CLARIFY = "r-20261128-0740-notifications-digest/reports/phase-3-CoreImplementer-attempt-1.json"
GATED = {"confirm": CONFIRM, "escalation": ESCALATION, "hold": HOLD, "resume": RESUME, "worktree": WORKTREE, "clarify": CLARIFY}
RUNS = sorted({p.split("/", 1)[0] for p in GATED.values()})


def keygen(path: Path, comment: str) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip() if path.suffix == "" else Path(str(path) + ".pub").read_text().strip()


def ssh_sign(data: bytes, key: Path, namespace: str = "triage-decision-v1") -> bytes:
    return subprocess.run(["ssh-keygen", "-Y", "sign", "-f", str(key), "-n", namespace], input=data,
                          capture_output=True, check=True).stdout


def ssh_verify(data: bytes, sig: Path, allowed: Path, principal: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", principal, "-n", "triage-decision-v1",
                           "-s", str(sig)], input=data, capture_output=True)


@dataclass
class Kit:
    base: Path
    root: Path
    etc: Path

    @property
    def config(self) -> Path:
        return self.etc / "config.toml"

    @property
    def policy_file(self) -> Path:
        return self.etc / "policy.toml"

    @property
    def allowed(self) -> Path:
        return self.etc / "allowed_signers"

    def key(self, who: str) -> Path:
        return self.etc / who

    def settings(self):
        return load_settings(self.config, roots=[self.root])

    def policy(self):
        return load_policy(self.policy_file, roots=[self.root])

    def finding(self, rel: str):
        index = FindingIndex([self.root], keep_findings=True)
        index.scan()
        found = index.get(rel)
        assert found is not None, rel
        return found

    def own_finding(self, rel: str):
        """The file's own finding, without scanning the root (for gates the file itself carries)."""
        from console.core import reading
        from console.core.formats import load_entry

        return load_entry(str(self.root), rel, reading.read_json(str(self.root), rel)).finding

    def write_policy(self, **gates: list[str]) -> None:
        lines = ['allowed_signers = "allowed_signers"', 'decision_lifetime = "24h"', "[gates]"]
        lines += [f"{gate} = {json.dumps(who)}" for gate, who in gates.items()]
        self.policy_file.write_text("\n".join(lines) + "\n")


PRINCIPALS = ("alice@example.com", "bob@example.com", "lead@example.com", "deploy@example.com")


def make_kit(tmp: Path, runs: list[str] | None = None) -> Kit:
    root = tmp / "runs"
    root.mkdir()
    for run in runs if runs is not None else RUNS:
        shutil.copytree(sample_runs_dir() / run, root / run)
    etc = tmp / "etc"
    etc.mkdir()
    lines = []
    for principal in PRINCIPALS:
        name = principal.split("@")[0]
        public = keygen(etc / name, principal)
        lines.append(f"{principal} {public}")
    (etc / "allowed_signers").write_text("\n".join(lines) + "\n")
    kit = Kit(tmp, root, etc)
    everyone = list(PRINCIPALS)
    kit.write_policy(confirm=everyone, escalation=["alice@example.com", "bob@example.com"], hold=["lead@example.com"],
                     resume=everyone, worktree=everyone, clarify=everyone, retry=everyone)
    kit.config.write_text('operator = "alice@example.com"\nsigning_key = "alice"\npolicy = "policy.toml"\n')
    return kit
