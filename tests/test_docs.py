"""The documentation says what the code does."""

from pathlib import Path

from console.core.taxonomy import _ROWS

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_crosswalk_table_in_docs_matches_code() -> None:
    text = (DOCS / "formats.md").read_text(encoding="utf-8")
    for row in _ROWS:
        line = f"| {row.taxonomy} | `{row.name}` | {row.route} | {row.gate or '—'} | {row.meaning} |"
        assert line in text, line


def test_cli_doc_names_every_finding_field() -> None:
    from console.core.findings import Finding

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    for name, field in Finding.model_fields.items():
        assert f"`{field.alias or name}`" in text, name
