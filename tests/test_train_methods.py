"""The method registry behind `sembed train --method`: the command's choices, options, "only for" rule, dispatch
and help all come from it, and a new method is its own module plus one registry line."""

from __future__ import annotations

import sys
from dataclasses import FrozenInstanceError, dataclass, fields

import pytest
import typer
from conftest import sembed
from typer.testing import CliRunner

from sembed_cli.commands.train import command_for
from sembed_cli.training.methods import METHODS, NAMES, Job, Method, Recipe
from sembed_cli.training.methods.method import option, option_of


def train_help() -> str:
    run = sembed("train", "--help")
    assert run.exit_code == 0
    return run.stdout


def test_the_registry_lists_each_method_once_under_its_module_name():
    assert tuple(METHODS) == NAMES == ("sbert", "cf", "ta", "nws", "mlm", "poi", "syntax", "static")
    for name, method in METHODS.items():
        assert method.name == name and sys.modules[method.run.__module__].METHOD is method


def test_settings_are_frozen_and_every_field_has_its_default_and_its_option():
    for method in METHODS.values():
        settings = method.settings()
        with pytest.raises(FrozenInstanceError):
            settings.__setattr__(fields(settings)[0].name, None)
        for f in fields(method.settings):
            spec = option_of(f)
            assert spec is None or spec.flags[0] == "--" + f.name.replace("_", "-"), (method.name, f.name)


def unwrapped(text: str) -> str:
    return "".join(text.split())  # help wraps lines, also after a hyphen


def test_help_is_generated_from_the_registry_and_documents_every_option():
    text = unwrapped(train_help())
    assert unwrapped("--method sbert|cf|ta|nws|mlm|poi|syntax|static") in text
    for method in METHODS.values():
        assert unwrapped(f"{method.name}: {method.summary}") in text
        assert unwrapped(method.description) in text  # its paragraph of the Methods section
        for f in fields(method.settings):
            spec = option_of(f)
            assert unwrapped(f"{spec.flags[0]} {spec.metavar or ''}" if spec else "-m, --model MODEL") in text
            if spec is not None:
                assert unwrapped(spec.help) in text
    assert unwrapped("sbert, cf  4 epochs, batch 16 pairs, AdamW 2e-5, 10% warm-up (the paper's)") in text
    assert unwrapped("--from-scratch: 1 epoch, batch 512 names, AdamW 0.001, 5% warm-up") in text
    assert unwrapped("[default: 0.2]") in text  # cf's W_cf, from the field's default


VALID = {"score_range": "0:5", "validation": "held-out.jsonl", "max_steps": "10"}  # options without a default


@pytest.mark.parametrize("method", list(METHODS))
def test_an_option_of_every_other_method_is_a_usage_error(method, tmp_path):
    mine = METHODS[method].option_names()
    others = {
        f.name: (option_of(f).flags[0], m.name)
        for m in METHODS.values()
        for f in fields(m.settings)
        if f.name not in mine and option_of(f) is not None
    }
    for name, (flag, owner) in others.items():
        takers = "|".join(m.name for m in METHODS.values() if name in m.option_names())
        default = getattr(METHODS[owner].settings(), name)
        value = [] if isinstance(default, bool) else [VALID.get(name, str(default))]
        run = sembed("train", "--method", method, "-o", str(tmp_path / "m"), flag, *value, input="")
        assert run.exit_code == 2, (method, flag, run.stderr)
        assert f"Invalid value for '{flag}': only for --method {takers}" in " ".join(run.stderr.split())
    assert not (tmp_path / "m").exists()


def test_float_options_must_be_finite(tmp_path):
    for args in (
        ["--method", "cf", "--cf-weight", "nan"],
        ["--method", "poi", "--margin", "inf"],
        ["--method", "sbert", "--lr", "inf"],
    ):
        run = sembed("train", *args, "-o", str(tmp_path / "m"), input="")
        assert run.exit_code == 2 and "must be a finite number" in run.stderr, args


# --- an eighth method: what the README's development section shows ------------------------------------------


@dataclass(frozen=True)
class EchoSettings:
    greeting: str = option("hello", "--greeting", metavar="TEXT", help="what DIR/greeting.txt says.")
    times: int = option(1, "--times", metavar="N", min=1, help="how often it says it.")


def run_echo(job: Job, settings: EchoSettings) -> None:
    job.output.mkdir()
    (job.output / "greeting.txt").write_text(
        f"{settings.greeting * settings.times} {job.recipe.epochs} {job.recipe.lr:g} {list(job.source)}\n"
    )


ECHO = Method(
    "echo",
    "says hello",
    "Writes a greeting to DIR/greeting.txt, the whole of its training.",
    Recipe(3, 8, 0.5, None, optimizer="nothing", unit="greetings"),
    EchoSettings,
    run_echo,
)


def test_an_eighth_method_needs_only_its_module_and_a_registry_entry(tmp_path):
    app = typer.Typer(rich_markup_mode=None)  # plain help, as sembed's
    app.command("train")(command_for({**METHODS, "echo": ECHO}))
    app.command("other")(lambda: None)  # two commands, so `train` is a subcommand as in sembed

    def train(*args: str):
        return CliRunner().invoke(app, ["train", *args], input='{"text": "a"}\n', catch_exceptions=False)

    run = train("--method", "echo", "--greeting", "hi", "--times", "2", "--lr", "0.25", "-o", str(tmp_path / "e"))
    assert run.exit_code == 0, run.stderr
    assert (tmp_path / "e" / "greeting.txt").read_text() == "hihi 3 0.25 [{'text': 'a'}]\n"
    run = train("--method", "sbert", "--times", "2", "-o", str(tmp_path / "s"))
    assert run.exit_code == 2 and "Invalid value for '--times': only for --method echo" in run.stderr
    run = train("--method", "echo", "--cf-weight", "0.3", "-o", str(tmp_path / "s"))
    assert run.exit_code == 2 and "Invalid value for '--cf-weight': only for --method cf" in run.stderr
    run = train("--method", "echo", "--warmup", "0.1", "-o", str(tmp_path / "s"))
    assert run.exit_code == 2 and "only for --method sbert|cf|ta|mlm|poi" in run.stderr
    text = unwrapped(train("--help").stdout)
    assert unwrapped("echo: says hello") in text and unwrapped("echo Writes a greeting") in text
    assert unwrapped("echo 3 epochs, batch 8 greetings, nothing 0.5") in text
    assert unwrapped("--times N echo: how often it says it. [default: 1; x>=1]") in text
