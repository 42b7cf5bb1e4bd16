"""The rules conftest.py applies to every cell nbval runs: each kind of noise is caught, a clean cell passes."""

from output_rules import bar_description, noise


def bar(text: str) -> dict:
    return {
        "output_type": "display_data",
        "data": {"text/plain": text, "application/vnd.jupyter.widget-view+json": {"model_id": "x"}},
    }


def test_a_bookkeeping_bar_is_noise_and_a_generation_bar_is_not():
    casting, generating = (
        bar("Casting the dataset:   0%|          | 0/2000 [00:00<?, ? examples/s]"),
        bar("generate:   0%|          | 0/8 [00:00<?, ?it/s]"),
    )
    assert (bar_description(casting), bar_description(generating)) == ("Casting the dataset", "generate")
    assert noise([casting]) == ["a progress bar of the libraries' own bookkeeping: 'Casting the dataset'"]
    assert noise([generating, bar("t5 summaries:  50%|#####     | 1/2")]) == []
    assert noise([bar("Loading weights:   0%|          | 0/47")]) and noise([bar("Writing model shards: 100%|")])


def test_a_linker_error_is_noise():
    text = "/usr/bin/ld: cannot find -laio: No such file or directory\ncollect2: error: ld returned 1 exit status\n"
    assert len(noise([{"output_type": "stream", "name": "stderr", "text": text}])) == 2


def test_a_command_of_twenty_flags_is_noise_and_one_of_ten_is_not():
    def command(flags: int) -> dict:
        return {
            "output_type": "stream",
            "name": "stdout",
            "text": "deepspeed --num_gpus 8 " + " ".join(f"--flag-{i} {i}" for i in range(flags - 1)) + "\n",
        }

    assert noise([command(20)]) and noise([command(10)]) == []


def test_a_clean_cell_passes():
    assert (
        noise(
            [
                {"output_type": "stream", "name": "stdout", "text": "accuracy 0.850\n"},
                {"output_type": "execute_result", "data": {"text/plain": "   value\n"}},
            ]
        )
        == []
    )


def test_a_table_cell_pandas_cut_short_is_noise_and_a_whole_one_is_not():
    import pandas as pd

    table = pd.DataFrame({"summary": ["a summary of the storm that closed every road in the county for two days"]})
    with pd.option_context("display.max_colwidth", 50):  # pandas' default, whatever an earlier test set
        cut = {"output_type": "execute_result", "data": {"text/html": table._repr_html_(), "text/plain": str(table)}}
    assert noise([cut]) == ["a table cell cut short by pandas (set pd.set_option('display.max_colwidth', ...))"]
    with pd.option_context("display.max_colwidth", 400):
        whole = {"output_type": "execute_result", "data": {"text/html": table._repr_html_()}}
    assert noise([whole]) == []
    dots = pd.DataFrame({"output": ["a model that writes only dots ......"]})  # its own text, not a cut
    assert noise([{"output_type": "execute_result", "data": {"text/html": dots._repr_html_()}}]) == []
