"""`graphlab serve` refuses bad arguments with one line, and builds the app's config."""

from __future__ import annotations

import argparse

from graphlab.cli import build_parser, main
from graphlab.commands.serve import config_from_args
from graphlab.samples import resolve_model


def args_for(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["serve", "--no-browser", *argv])


def test_unknown_model_is_one_line_and_exit_2(capsys):
    assert main(["serve", "--no-browser", "--model", "no_such_model"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no_such_model" in err


def test_bad_worker_count_is_refused(capsys):
    assert main(["serve", "--no-browser", "--workers", "0"]) == 2
    assert "--workers" in capsys.readouterr().err


def test_build_limits_are_checked_and_reach_the_config(capsys):
    assert main(["serve", "--no-browser", "--build-memory-mb", "-1"]) == 2
    assert "--build-memory-mb must be 0 (no limit) or more" in capsys.readouterr().err
    assert main(["serve", "--no-browser", "--build-seconds", "0"]) == 2
    assert "--build-seconds must be between 1 and" in capsys.readouterr().err
    config = config_from_args(args_for("--build-memory-mb", "512", "--build-seconds", "20"))
    assert (config.build_memory_mb, config.build_seconds) == (512, 20)


def test_sample_and_file_models_become_the_default_view():
    assert config_from_args(args_for("--model", "teach_gelu")).default_model == "teach_gelu"
    path = resolve_model("teach_gelu")
    config = config_from_args(args_for("--model", path, "--max-upload-mb", "3"))
    assert config.extra_model_path.endswith("teach_gelu.onnx")
    assert config.upload_limit == 3 << 20


def test_the_app_builds_with_its_callbacks(tmp_path):
    from graphlab.app import AppConfig, create_app

    app = create_app(AppConfig(cache_dir=str(tmp_path)))
    assert len(app.callback_map) >= 6


def test_redis_needs_a_redis_url_and_says_how_to_install_the_extra(capsys, monkeypatch):
    from graphlab.app import shared_storage

    assert main(["serve", "--no-browser", "--redis", "localhost:6379"]) == 2
    assert "is not a Redis URL" in capsys.readouterr().err
    monkeypatch.setattr(shared_storage, "_importable", lambda name: name != "celery")
    assert main(["worker", "--redis", "redis://127.0.0.1:1/0"]) == 2
    err = capsys.readouterr().err
    assert "--redis needs the Python package celery, which is not installed" in err
    assert 'pip install ".[cluster]"' in err


def test_a_worker_without_redis_says_where_to_give_it(capsys, monkeypatch):
    monkeypatch.delenv("GRAPHLAB_REDIS_URL", raising=False)
    assert main(["worker"]) == 2
    assert "--redis redis://HOST:PORT/DB or set GRAPHLAB_REDIS_URL" in capsys.readouterr().err
