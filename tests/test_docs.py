"""The documentation says what the code does."""

from pathlib import Path

from console.core.formats.__main__ import BLOCKS, render

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_the_generated_tables_in_formats_md_are_the_registrys() -> None:
    """docs/formats.md's crosswalk and producer tables are generated from the registry
    (python -m console.core.formats --write docs/formats.md) and kept so."""
    text = (DOCS / "formats.md").read_text(encoding="utf-8")
    for name in BLOCKS:
        assert f"<!-- generated: {name} -->" in text and f"<!-- end: {name} -->" in text, name
    assert render(text) == text, "run: python -m console.core.formats --write docs/formats.md"


def test_cli_doc_names_every_finding_field() -> None:
    from console.core.findings import Finding

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    for name, field in Finding.model_fields.items():
        assert f"`{field.alias or name}`" in text, name


def test_the_pipeline_recipe_in_decisions_md_accepts_a_real_decision_and_refuses_a_stale_one(tmp_path) -> None:
    import re
    import shutil
    import subprocess

    import pytest

    if not (shutil.which("jq") and shutil.which("ssh-keygen") and shutil.which("sha256sum")):
        pytest.skip("the recipe needs jq, ssh-keygen and sha256sum")
    from console.core import decisions, signing
    from decision_kit import CONFIRM, make_kit

    text = (DOCS / "decisions.md").read_text(encoding="utf-8")
    recipe = re.search(r"```sh\n(.*?)```", text, re.S).group(1)
    kit = make_kit(tmp_path)
    script = tmp_path / "check-decision"
    script.write_text(recipe.replace("/etc/triage/allowed_signers", str(kit.allowed)))
    decisions.decide(str(kit.root), kit.finding(CONFIRM), choice="approve", operator="alice@example.com",
                     signer=signing.resolve(str(kit.key("alice"))), policy=kit.policy())
    args = ["sh", str(script), str(kit.root), CONFIRM, "confirm"]
    ok = subprocess.run([*args, "alice@example.com", "bob@example.com"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip().splitlines()[-1] == "confirm approve"
    assert subprocess.run([*args, "bob@example.com"], capture_output=True).returncode != 0  # alice may not sign
    (kit.root / CONFIRM).write_bytes((kit.root / CONFIRM).read_bytes() + b" ")
    assert subprocess.run([*args, "alice@example.com"], capture_output=True).returncode != 0  # stale


def test_the_figures_in_classification_md_are_the_rules_real_result() -> None:
    """docs/classification.md's accuracy tables are the classifier's result on the corpus now
    (python -m bench.truth --write docs/classification.md)."""
    import sys

    sys.path.insert(0, str(DOCS.parent))
    from bench import truth

    text = (DOCS / "classification.md").read_text(encoding="utf-8")
    assert truth.MARK_START in text and truth.MARK_END in text
    assert truth.render(text, truth.evaluate(truth.load())) == text, \
        "run: python -m bench.truth --write docs/classification.md"
