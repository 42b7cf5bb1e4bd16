"""course_utils: the shared helpers behind the course "Fine-tuning and Evaluating LLMs".

The notebooks in ``notebooks/`` show each lesson's code; the labs in ``notebooks/labs/`` let the student write it.
The house has four parts: the lessons' support (the modules below), lesson 04's pretraining (the folder
``pretraining/``), the labs' checks (the folder ``labs/``) and the smoke stand-ins' build (the folder ``standins/``). Cells marked ``#@save`` are also modules of the
package (written by ``python tools/export.py``), which the launchers (``deepspeed``, ``torchrun``,
``accelerate launch``) and the tests import. A module imports only what stands below it; counted with each folder
as one room, the house has five floors (``tests/test_repository.py`` measures it).

1. Leaves, which import nothing of the package:
- ``paths``           where the repository, outputs and caches are
- ``configs``         checked overrides of typed configs, ``--help`` from each field's help, one-line errors, DataSource
- ``offline``         the offline switches, stand-in names, the missing-asset error
- ``quiet``           library notices and bookkeeping progress bars that say nothing a student can act on, dropped
- ``tokens``          documents packed into rows of one length; the number of sentinels that end T5's vocabulary
- ``generation``      batched generation in length order, results in the input order
- ``metrics``         each notebook's key figures and their units, recorded into ``metrics.json``
- ``rouge``           ROUGE-1/2/L/Lsum, one sentence per line
- ``memory``          how many rows fit in GPU memory, and each run's peak memory
- ``machine``         the device, its memory and bf16, a matmul rate, DeepSpeed's buildable ops (notebook 00 calls them)
- ``device_report``   (from notebook 00) library versions, and whether torch.compile builds kernels
- ``zero_memory``     (from notebook 02) model-state bytes per GPU by the ZeRO paper's formulas
- ``evaluation``      (from notebook 05) the paired bootstrap and permutation test, the judge's prompt in both orders
- ``pretrain``        the old command's name, forwarding to ``python -m course_utils.pretraining``
2. Settings, sources and the machine:
- ``profiles``        the smoke and full profiles: model names, data sources, each lesson's settings
- ``hardware``        the training device and the precision rule (bf16, fp32, TF32)
- ``sources``         where a data set's files are (a local folder or the Hugging Face cache) and their checked reading
- ``sentiment_trainer`` (from notebook 01) labels as words, the tokenize function, the Trainer and its arguments, answers by
  generate and their score
- ``summarizers``     (from notebook 03) T5 and GPT-2 summaries, their repetition measure, Lead-3 without the byline
- ``runner``          executes the notebooks with papermill and writes ``report.md``
- ``standin_files``   the shipped stand-ins on disk: where, their manifest, the check that each is whole
- ``summary_setup``   lesson 03's settings, and each article's summaries for lesson 05
3. Loading:
- ``environment``     a notebook's session: offline switches, one GPU, the output folder
- ``hub``             the Hugging Face cache: prefetch and what is there offline
- ``data``            IMDB, CNN/DailyMail and LAMBADA with the Hub's columns, from the Hub or ``data/``; IMDB's rows checked
- ``models``          models and tokenizers onto the training device; T5 v1.1's untied output layer
- ``zero``            DeepSpeed configs checked, launcher variables, model-state memory per ZeRO stage
- ``eval_setup``      lesson 05's settings, the earlier lessons' outputs it reads, lm-eval's tasks on local files
- ``instruct``        lab 01L's Dolly-15k, its settings per profile, and the reference prompt, labels and LoRA size
4. Runs, and a folder:
- ``finetune``        lesson 01's fine-tune as one command (lessons 02 and 04 launch it)
- ``cli``             the ``course`` command
- ``pretraining``     lesson 04's support: config and plan, data, span corruption, the optimizers and schedules,
                      checkpoints, the run, the loop, the race, the command
5. On top, and two folders:
- ``launch``          the fine-tune in a fresh process, or as a cluster command
- ``labs``            the labs' checks (``from course_utils.labs import check``) and questions
- ``standins``        the smoke stand-ins' build: pretrained on the shipped data, written to ``standins/``

Importing the package, or its session, data, profile and command modules, imports no heavy library and
changes nothing: no environment variables, seeds or downloads.
"""
