"""The lithos command: stats, search, reindex and validate on a data directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lithos import __version__
from lithos.cli.main import main
from lithos.domain.notes import split_frontmatter
from tests.fakes import HashingEmbedder


@pytest.fixture(autouse=True)
def fake_embedder(monkeypatch):
    """The CLI builds its own app; give it the fast embedder (the real one is tested apart)."""
    monkeypatch.setattr("lithos.app.create_embedder", lambda *a, **k: HashingEmbedder())


def knowledge(data_dir: Path) -> Path:
    path = data_dir / "knowledge"
    path.mkdir(parents=True, exist_ok=True)
    return path


def run(data_dir: Path, *args: str) -> int:
    return main(["--data-dir", str(data_dir), *args])


def test_reindex_indexes_dropped_in_files_and_stats_counts_them(data_dir: Path, capsys):
    notes = knowledge(data_dir)
    (notes / "one.md").write_text("# One\n\nfirst body\n")
    (notes / "sub").mkdir()
    (notes / "sub" / "two.md").write_text("---\ntitle: Two\ntags: [t]\n---\nsecond body\n")
    assert run(data_dir, "reindex") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["files"] == 2 and report["ids_assigned"] == 2
    assert run(data_dir, "stats", "--json") == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["documents"] == 2 and stats["tags"] == 1
    assert stats["indexes"]["pending_chunks"] == 0 and stats["indexes"]["fulltext_documents"] == 2


def test_incremental_reindex_redoes_nothing_and_clear_rebuilds(data_dir: Path, capsys):
    (knowledge(data_dir) / "a.md").write_text("# A\n\nbody\n")
    run(data_dir, "reindex")
    capsys.readouterr()
    run(data_dir, "reindex")
    again = json.loads(capsys.readouterr().out)
    assert again["unchanged"] == 1 and again["fulltext_fixed"] == 0
    run(data_dir, "reindex", "--clear")
    cleared = json.loads(capsys.readouterr().out)
    assert cleared["fulltext_fixed"] == 1 and cleared["catalog_fixed"] == 1


def test_search_prints_matching_notes(data_dir: Path, capsys):
    (knowledge(data_dir) / "wombat.md").write_text("# Wombats\n\nCube-shaped droppings.\n")
    run(data_dir, "reindex")
    capsys.readouterr()
    assert run(data_dir, "search", "droppings") == 0
    out = capsys.readouterr().out
    assert "wombat.md" in out and "Wombats" in out
    assert run(data_dir, "search", "droppings", "--semantic") == 0
    assert "wombat.md" in capsys.readouterr().out


def test_validate_reports_link_and_frontmatter_problems_with_exit_1(data_dir: Path, capsys):
    notes = knowledge(data_dir)
    (notes / "a").mkdir()
    (notes / "b").mkdir()
    (notes / "a" / "dup.md").write_text("# Dup\n")
    (notes / "b" / "dup.md").write_text("# Dup\n")
    (notes / "src.md").write_text("# Src\n\n[[dup]] [[nowhere]] [[a/dup]]\n")
    (notes / "bad.md").write_text("---\ntitle: [x\n---\n")
    (notes / "badconf.md").write_text("---\nid: nope\ntitle: T\nconfidence: 7\n---\nbody\n")
    assert run(data_dir, "validate") == 1
    out = capsys.readouterr().out
    assert "src.md: ambiguous_link: [[dup]]" in out
    assert "src.md: broken_link: [[nowhere]]" in out
    assert "[[a/dup]]" not in out
    assert "bad.md: malformed_frontmatter" in out
    assert "badconf.md: malformed_id" in out and "badconf.md: malformed_field" in out
    assert "missing_frontmatter" not in out  # a person's file needs no frontmatter


def test_validate_reports_invalid_metadata_values_and_what_they_read_as(data_dir: Path, capsys):
    notes = knowledge(data_dir)
    (notes / "meta.md").write_text(
        "---\ntitle: M\nnote_type: idea\naccess_scope: user_private\n---\nbody\n"
    )
    assert run(data_dir, "validate") == 1
    out = capsys.readouterr().out
    assert "meta.md: malformed_field: note_type 'idea' is not valid" in out
    assert (
        "access_scope 'user_private' is not valid; it is kept and reads as 'agent_private'" in out
    )


def test_validate_reports_stale_links_after_a_rename(data_dir: Path, capsys):
    notes = knowledge(data_dir)
    (notes / "old-name.md").write_text("# Renamed\n")
    (notes / "linker.md").write_text("# Linker\n\nsee [[old-name]]\n")
    run(data_dir, "reindex")
    (notes / "old-name.md").rename(notes / "new-name.md")
    run(data_dir, "reindex")
    capsys.readouterr()
    assert run(data_dir, "validate") == 1
    assert "linker.md: stale_link: [[old-name]] points to a note that moved to new-name.md" in (
        capsys.readouterr().out
    )


def test_validate_is_clean_and_exits_0_for_good_notes(data_dir: Path, capsys):
    notes = knowledge(data_dir)
    (notes / "a.md").write_text("# A\n\n[[b]]\n")
    (notes / "b.md").write_text("# B\n")
    run(data_dir, "reindex")
    assert (notes / "a.md").read_text() == "# A\n\n[[b]]\n"  # reindex never writes a file
    assert run(data_dir, "validate") == 0


def test_invalid_config_is_a_one_line_error_with_exit_2(data_dir: Path, capsys):
    data_dir.mkdir(parents=True)
    (data_dir / "config.yaml").write_text("server:\n  port: -1\n")
    assert run(data_dir, "stats") == 2
    err = capsys.readouterr().err
    assert "config_error" in err and "server.port" in err


def test_validate_reports_a_file_too_large_to_be_a_note(data_dir: Path, capsys):
    data_dir.mkdir(parents=True)
    (data_dir / "config.yaml").write_text("storage:\n  max_content_bytes: 1000\n")
    (knowledge(data_dir) / "big.md").write_text("# Big\n\n" + "x" * 100_000)
    assert run(data_dir, "validate") == 1
    assert "big.md: too_large" in capsys.readouterr().out


def test_global_options_work_after_the_command_as_the_readme_writes_them(data_dir: Path, capsys):
    (knowledge(data_dir) / "a.md").write_text("# A\n\nbody\n")
    assert main(["reindex", "--data-dir", str(data_dir)]) == 0
    capsys.readouterr()
    assert main(["stats", "--data-dir", str(data_dir), "-v", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 1


def test_a_global_option_before_the_command_is_not_reset_by_the_command(data_dir: Path, capsys):
    (knowledge(data_dir) / "a.md").write_text("# A\n\nbody\n")
    run(data_dir, "reindex")
    capsys.readouterr()
    assert main(["--data-dir", str(data_dir), "stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 1


@pytest.mark.parametrize("command", [["stats"], ["search", "x"], ["validate"], ["reindex"]])
def test_a_mistyped_data_dir_is_an_error_and_creates_nothing(tmp_path: Path, capsys, command):
    missing = tmp_path / "no-such-dir"
    assert main([*command, "--data-dir", str(missing)]) == 2
    assert "data_dir_not_found" in capsys.readouterr().err
    assert not missing.exists()


def test_reindex_exits_1_when_it_skipped_a_file_validate_flags(data_dir: Path, capsys):
    data_dir.mkdir(parents=True)
    (data_dir / "config.yaml").write_text("storage:\n  max_content_bytes: 1000\n")
    (knowledge(data_dir) / "big.md").write_text("# Big\n\n" + "x" * 100_000)
    (knowledge(data_dir) / "fine.md").write_text("# Fine\n\nbody\n")
    assert run(data_dir, "reindex") == 1
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert [p["path"] for p in report["problems"]] == ["big.md"]
    assert "1 file(s) not indexed" in captured.err


def test_reindex_without_a_terminal_prints_one_parseable_progress_line(data_dir: Path, capsys):
    notes = knowledge(data_dir)
    for n in range(3):
        (notes / f"n{n}.md").write_text(f"# N{n}\n\nbody {n}\n")
    assert run(data_dir, "reindex") == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("progress")]
    assert lines[0].startswith("progress task=files done=3 total=3 rate=")
    assert lines[-1].startswith("progress task=embedding done=") and len(lines) == 2


def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"lithos {__version__}"


def test_stats_prints_a_table_for_people_by_default(data_dir: Path, capsys):
    (knowledge(data_dir) / "a.md").write_text("---\ntitle: A\ntags: [x]\n---\nbody\n")
    run(data_dir, "reindex")
    capsys.readouterr()
    assert run(data_dir, "stats") == 0
    rows = {}
    for line in capsys.readouterr().out.splitlines():
        name, _, value = line.partition("  ")
        rows[name.strip()] = value.strip()
    assert rows["notes"] == "1" and rows["tags"] == "1"
    assert rows["full-text index"] == "1 notes" and rows["pending chunks"] == "0"


def test_search_json_is_the_result_object_for_scripts(data_dir: Path, capsys):
    (knowledge(data_dir) / "wombat.md").write_text("# Wombats\n\nCube-shaped droppings.\n")
    run(data_dir, "reindex")
    capsys.readouterr()
    assert run(data_dir, "search", "droppings", "--json") == 0
    result = json.loads(capsys.readouterr().out)
    assert [hit["path"] for hit in result["results"]] == ["wombat.md"]
    assert result["mode"] == "fulltext"


def test_reindex_also_logs_to_a_file_in_the_data_dir(data_dir: Path, capsys):
    (knowledge(data_dir) / "a.md").write_text("# A\n\nbody\n")
    run(data_dir, "reindex")
    log = (data_dir / ".lithos" / "logs" / "lithos.log").read_text()
    assert "index check" in log


def test_adopt_writes_ids_into_the_named_file_only(data_dir: Path, capsys):
    notes = knowledge(data_dir)
    (notes / "a.md").write_text("# A\n")
    (notes / "b.md").write_text("# B\n")
    assert run(data_dir, "adopt", "a.md") == 0
    assert capsys.readouterr().out.split() == ["a.md"]
    meta, body = split_frontmatter((notes / "a.md").read_text())
    assert meta["id"] and body == "# A\n"
    assert (notes / "b.md").read_text() == "# B\n"
    assert run(data_dir, "adopt") == 0
    assert capsys.readouterr().out.split() == ["b.md"]


def test_validate_suggests_the_note_a_broken_link_probably_meant(data_dir: Path, capsys):
    notes = knowledge(data_dir)
    (notes / "loop.md").write_text("---\ntitle: Event Loop\n---\nbody\n")
    (notes / "user.md").write_text("# User\n\n[[Evnt Loop]] and [[event loop]] and [[Zebra]]\n")
    assert run(data_dir, "validate") == 1
    out = capsys.readouterr().out
    assert (
        "user.md: broken_link: [[Evnt Loop]] matches no note; did you mean [[Event Loop]]?" in out
    )
    assert "[[event loop]]" not in out  # resolved by title, ignoring case
    assert "user.md: broken_link: [[Zebra]] matches no note\n" in out


def test_import_copies_a_folder_and_search_finds_it_at_once(data_dir: Path, tmp_path, capsys):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "one.md").write_text("# One\n\nbilby facts\n")
    (vault / "two.md").write_text("# Two\n\nmore bilby facts\n")
    assert run(data_dir, "import", str(vault), "--into", "imported") == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["files"], report["imported"], report["skipped"]) == (2, 2, [])
    assert (knowledge(data_dir) / "imported" / "one.md").read_text() == "# One\n\nbilby facts\n"
    assert run(data_dir, "search", "bilby") == 0
    assert "imported/one.md" in capsys.readouterr().out


def test_import_exits_1_and_lists_what_it_skipped(data_dir: Path, tmp_path, capsys):
    (knowledge(data_dir) / "one.md").write_text("# Mine\n")
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "one.md").write_text("# Theirs\n")
    assert run(data_dir, "import", str(vault)) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["skipped"][0]["path"] == "one.md" and report["skipped"][0]["reason"] == "exists"
