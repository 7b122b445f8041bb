"""``python -m rebalance_replay.schemas``: regenerate ``docs/tables.md`` from the table definitions."""

from pathlib import Path

from rebalance_replay.schemas.tables import tables_markdown

if __name__ == "__main__":
    out = Path(__file__).resolve().parents[2] / "docs" / "tables.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(tables_markdown(), encoding="utf-8")
    print(f"wrote {out}")
