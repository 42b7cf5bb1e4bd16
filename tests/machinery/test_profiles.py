"""The two profiles: one place for names and sizes, no profile switches anywhere else."""

import inspect
from pathlib import Path

import pytest

from course_utils import standins
from course_utils.lessons.summary_setup import SummaryConfig, summary_config
from course_utils.machinery import hardware, metrics
from course_utils.machinery.configs import DataSource
from course_utils.machinery.profiles import MODEL_ROLES, QUICK_CAPS, get_profile
from course_utils.models_and_data import data, models
from course_utils.pretraining.config import PretrainConfig


def test_smoke_is_offline_cpu_with_standins_and_shipped_data():
    smoke = get_profile()
    assert smoke.name == "smoke" and smoke.offline and not smoke.require_gpu
    assert smoke.models == {
        "t5_small": "standin:t5-small",
        "t5_base": "standin:t5-base",
        "gpt2": "standin:gpt2",
        "t5_v1_1_base": "standin:t5-v1_1-base",
        "pythia": "standin:pythia-70m-deduped",
        "judge": "standin:Qwen2.5-0.5B-Instruct",
    }
    for source in (smoke.imdb, smoke.cnn_dailymail, smoke.c4, smoke.dolly, smoke.lambada):
        assert Path(source.path).is_dir() and source.config is None


def test_full_names_the_hub_models_and_data_sets():
    full = get_profile("full")
    assert not full.offline and full.require_gpu
    assert full.models == {
        "t5_small": "t5-small",
        "t5_base": "t5-base",
        "gpt2": "gpt2",
        "t5_v1_1_base": "google/t5-v1_1-base",
        "pythia": "EleutherAI/pythia-70m-deduped",
        "judge": "Qwen/Qwen2.5-0.5B-Instruct",
    }
    assert full.lambada == DataSource("EleutherAI/lambada_openai", "default")
    assert full.imdb == DataSource("stanfordnlp/imdb")
    assert full.cnn_dailymail == DataSource("abisee/cnn_dailymail", "3.0.0")
    assert full.c4 == DataSource("allenai/c4", "en")
    assert full.dolly == DataSource("databricks/databricks-dolly-15k")


def test_both_profiles_fill_the_same_roles():
    assert set(get_profile("smoke").models) == set(get_profile("full").models) == set(MODEL_ROLES)


def test_overrides_are_checked():
    assert get_profile("full", require_gpu=False).require_gpu is False
    with pytest.raises(ValueError, match="batch_sise"):
        get_profile("smoke", batch_sise=3)
    with pytest.raises(ValueError, match="Unknown profile 'fast'.*smoke, full"):
        get_profile("fast")


@pytest.mark.parametrize("module", [data, models, standins, hardware, metrics])
def test_library_functions_take_no_profile_flag(module):
    for name, func in inspect.getmembers(module, inspect.isfunction):
        if func.__module__ != module.__name__:
            continue
        params = set(inspect.signature(func).parameters)
        assert not params & {"profile", "profile_name", "smoke", "is_smoke", "full"}, f"{module.__name__}.{name}"


def test_lesson_03_scores_100_articles_in_full_and_every_shipped_article_in_smoke():
    smoke, full = summary_config(get_profile("smoke")), summary_config(get_profile("full"))
    assert full == SummaryConfig(test_rows=100, max_new_tokens=80)
    assert smoke.test_rows is None  # all 50 shipped test articles
    assert smoke.max_new_tokens == full.max_new_tokens == 80


def test_a_profile_setting_with_a_misspelt_field_is_refused_with_its_name():
    with pytest.raises(ValueError, match="test_row"):
        summary_config(get_profile("smoke", summaries={"test_row": 3}))
    with pytest.raises(ValueError, match="warmups"):  # the stand-ins arrive pretrained: no warm-up to set
        summary_config(get_profile("smoke", summaries={"warmups": {}}))


def test_a_seed_reaches_every_training_run_of_the_profile():
    from course_utils.lessons.finetune import FinetuneConfig
    from course_utils.pretraining.config import PretrainConfig

    profile = get_profile("smoke", seed=7)
    assert FinetuneConfig.for_profile(profile, output_dir="x").seed == 7
    assert PretrainConfig.for_profile(profile, output_dir="x").seed == 7
    assert FinetuneConfig.for_profile(get_profile("smoke"), output_dir="x").seed == FinetuneConfig().seed


def test_quick_caps_rows_and_steps_and_keeps_the_rest():
    full, quick = get_profile("full"), get_profile("full", quick=True)
    assert quick.quick and not full.quick
    assert quick.models == full.models and quick.imdb == full.imdb and quick.require_gpu
    assert quick.finetune["max_train_rows"] == QUICK_CAPS["finetune"]["max_train_rows"] == 4
    from course_utils.lessons.finetune import FinetuneConfig

    for profile in (quick, get_profile("smoke", quick=True)):  # every capped key is a FinetuneConfig field
        capped = FinetuneConfig.for_profile(profile, "out")
        assert (capped.max_train_rows, capped.test_rows, capped.num_train_epochs) == (4, 4, 1.0)
    assert summary_config(quick).test_rows == 4 and summary_config(full).test_rows == 100
    config = PretrainConfig.for_profile(quick, "out")
    assert (config.input_length, config.total_steps, config.batch_size, config.gradient_accumulation_steps) == (
        512,
        2,
        4,
        2,
    )
    assert config.compile and config.learning_rate == PretrainConfig().learning_rate
    smoke_quick = get_profile("smoke", quick=True)  # a cap never raises a value
    assert smoke_quick.pretrain["input_length"] == 128 and smoke_quick.finetune["max_train_rows"] == 4
