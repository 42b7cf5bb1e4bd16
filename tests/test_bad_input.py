"""Bad input, tried as a new user would: each error names the file and the line (counted from 1, as an
editor shows it) and says what to do; the command-line entry points print it as one line and exit 2."""

import json
import subprocess
import sys

import pytest

from course_utils.lessons import finetune
from course_utils.machinery.configs import DataSource, InputError
from course_utils.machinery.paths import data_dir
from course_utils.models_and_data.data import read_imdb
from course_utils.models_and_data.models import resolve_model
from course_utils.pretraining import __main__ as pretraining_command
from course_utils.pretraining.data import iter_texts


def imdb_folder(tmp_path, test_lines: list[str], rows: int = 60):
    """A local IMDB folder: the first ``rows`` shipped training reviews, and ``test_lines`` as test.jsonl."""
    folder = tmp_path / "imdb"
    folder.mkdir()
    train = (data_dir() / "imdb" / "train.jsonl").read_text(encoding="utf-8").splitlines()[:rows]
    (folder / "train.jsonl").write_text("\n".join(train) + "\n", encoding="utf-8")
    (folder / "test.jsonl").write_text("\n".join(test_lines) + "\n", encoding="utf-8")
    return folder


def review(label: int) -> str:
    return json.dumps({"text": "A fine film.", "label": label})


def test_a_test_split_cut_short_names_its_last_line(tmp_path):
    folder = imdb_folder(tmp_path, [review(1), review(0), '{"text": "An interrupted co'])
    with pytest.raises(InputError) as err:
        read_imdb(DataSource(str(folder)))
    message = str(err.value)
    assert message.startswith(f"{folder / 'test.jsonl'}, line 3: not valid JSON")
    assert "copy the file again" in message and "\n" not in message


def test_a_bad_label_is_named_by_the_line_an_editor_shows(tmp_path):
    lines = [review(i % 2) for i in range(50)] + [review(7)]  # the 51st line
    folder = imdb_folder(tmp_path, lines)
    with pytest.raises(InputError, match=r"test.jsonl, line 51: 'label' is 7; expected one of \[-1, 0, 1\]"):
        read_imdb(DataSource(str(folder)))


def test_a_blank_line_still_counts_so_the_number_matches_the_editor(tmp_path):
    folder = imdb_folder(tmp_path, [review(1), "", review(2)])
    with pytest.raises(InputError, match=r"test.jsonl, line 3: 'label' is 2"):
        read_imdb(DataSource(str(folder)))


def test_a_text_file_that_is_not_utf8_names_file_line_and_byte(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"The first document.\nThe second one.\nA caf\xe9 in Latin-1.\n")
    with pytest.raises(
        InputError,
        match=r"corpus.txt, line 3: not UTF-8 text \(byte 6 of the line is 0xe9\); "
        r"save the file as UTF-8",
    ):
        list(iter_texts(str(corpus), None, "train"))


def test_the_fine_tune_command_prints_one_line_and_exits_2(tmp_path, capsys):
    folder = imdb_folder(tmp_path, [review(1), '{"text": "cut'])
    resolve_model("standin:t5-small")  # a first use builds the stand-in, and says so: not part of the error
    capsys.readouterr()
    status = finetune.main(
        ["--model-name", "standin:t5-small", "--data-path", str(folder), "--output-dir", str(tmp_path / "run")]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1
    assert (
        err[0].startswith("python -m course_utils.lessons.finetune: error: ")
        and "test.jsonl, line 2: not valid JSON" in err[0]
    )


def test_the_pretrain_command_names_the_bad_line_even_from_a_data_worker(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"".join(b"Document number %d is plain text.\n" % i for i in range(40)) + b"\xff\xfe\n")
    resolve_model("standin:t5-v1_1-base")
    capsys.readouterr()
    status = pretraining_command.main(
        [
            "--model-name",
            "standin:t5-v1_1-base",
            "--data-path",
            str(corpus),
            "--data-config",
            "",
            "--output-dir",
            str(tmp_path / "run"),
            "--input-length",
            "32",
            "--batch-size",
            "4",
            "--total-steps",
            "2",
            "--warmup-steps",
            "1",
            "--eval-batches",
            "1",
            "--checkpoint-every",
            "0",
            "--data-workers",
            "1",
            "--attn-implementation",
            "eager",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert (
        err[0].startswith("python -m course_utils.pretraining: error: ")
        and "corpus.txt, line 41: not UTF-8 text" in err[0]
    )


@pytest.mark.slow
def test_the_installed_command_exits_non_zero_without_a_traceback(tmp_path):
    folder = imdb_folder(tmp_path, [review(9)])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "course_utils.lessons.finetune",
            "--model-name",
            "standin:t5-small",
            "--data-path",
            str(folder),
            "--output-dir",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("python -m course_utils.lessons.finetune: error: ")
    assert "test.jsonl, line 1: 'label' is 9" in done.stderr
