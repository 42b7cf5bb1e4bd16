"""course_utils: the shared helpers behind the course "Fine-tuning and Evaluating LLMs".

The notebooks in ``notebooks/`` show each lesson's code; the labs in ``notebooks/labs/`` let the student write it. Their cells marked ``#@save`` are also
modules of this package (``export``), which the launchers (``deepspeed``, ``torchrun``,
``accelerate launch``) and the tests import; the rest is support, one module per job, in five
floors: a module imports only modules on the floors below its own (tests/test_repository.py).

1. Leaves, which import nothing of the package:
- ``paths``           where the repository, outputs and caches are
- ``configs``         checked overrides of typed configs, ``--help`` from each field's help, one-line errors, DataSource
- ``offline``         the offline switches, stand-in names, the missing-asset error
- ``quiet``           library notices and bookkeeping progress bars that say nothing a student can act on, dropped
- ``tokens``          documents packed into rows of one length
- ``generation``      batched generation in length order, results in the input order
- ``metrics``         each notebook's key figures and their units, recorded into ``metrics.json``
- ``rouge``           ROUGE-1/2/L/Lsum, one sentence per line
- ``optim``           AdamW with RMS scaling, Adafactor, the cosine and inverse-square-root schedules
- ``span_corruption`` T5's span-corruption objective
- ``memory``          how many rows fit in GPU memory, and each run's peak memory
- ``zero_memory``     (from notebook 02) model-state bytes per GPU by the ZeRO paper's formulas
- ``machine``         the device, its memory and bf16, a matmul rate, DeepSpeed's buildable ops (notebook 00 calls them)
- ``device_report``   (from notebook 00) library versions, and whether torch.compile builds kernels
- ``verdict``         how a lab's check reports: one line raised on a wrong answer, one printed on a right one
2. Settings, sources and the machine:
- ``profiles``        the smoke and full profiles: model names, data sources, each lesson's settings
- ``hardware``        the training device and the precision rule (bf16, fp32, TF32)
- ``sources``         where a data set's files are (a local folder or the Hugging Face cache) and their checked reading
- ``standins``        tiny stand-in models built from configs, saved and loaded by path
- ``sentiment``       IMDB's rows checked and sampled
- ``sentiment_trainer`` (from notebook 01) labels as words, the tokenize function, the Trainer and its arguments, answers by
  generate and their score
- ``summarizers``     (from notebook 03) T5 and GPT-2 summaries, their repetition measure, Lead-3 without the byline
- ``pretrain_config`` a pretraining run's typed config and its result, the batch arithmetic
- ``runner``          executes the notebooks with papermill and writes ``report.md``
- ``export``          writes the ``#@save`` cells into their modules, and checks that they match
- ``labs``            writes each lab's student copy from its solution, and checks that the copies are fresh
- ``quiz``            the labs' multiple-choice questions, each option explained, and their check
- ``lab_fits``        lab 00L's checks: T5's parameters, training-state bytes, the rows that fit
3. Loading:
- ``environment``     a notebook's session: offline switches, one GPU, the output folder
- ``hub``             the Hugging Face cache: prefetch and what is there offline
- ``data``            IMDB, CNN/DailyMail and C4 with the Hub's columns, from the Hub or ``data/``
- ``models``          models and tokenizers onto the training device; T5 v1.1's untied output layer
- ``zero``            DeepSpeed configs checked, launcher variables, model-state memory per ZeRO stage
- ``pretrain_data``   lesson 04's span-corrupted batches, made in DataLoader workers, resumable
- ``checkpoints``     checkpoints that survive a kill, the resume, the stop signals
- ``pretrain_command`` the pretraining command line: flags from the config, one-line errors, the result line
- ``pretrain_race``   lesson 04's optimizer race: the same run once per variant, one setting changed each
- ``instruct``        lab 01L's Dolly-15k, its settings per profile, and the reference prompt, labels and LoRA size
- ``lab_rouge``       lab 03L's checks: ROUGE's tokens, ROUGE-N, ROUGE-L and Lead-3 against rouge-score and lesson 03
- ``lab_nanot5``      lab 04L's checks: noise mask, sentinels, schedule and AdamW step against the course's code
4. Runs:
- ``finetune``        lesson 01's fine-tune as one command (lessons 02 and 04 launch it)
- ``pretrain_run``    what the pretraining loop calls besides forward, backward and step, and the plan it follows
- ``cli``             the ``course`` command
- ``lab_zero``        lab 02L's checks: a ZeRO-3 offload config, model-state bytes, the fastest setup that fits
- ``lab_instruction`` lab 01L's checks: prompt, labels, EOS, padding, falling loss, batched generation, LoRA's size
5. Lessons on top:
- ``launch``          the fine-tune in a fresh process, or as a cluster command
- ``summarize``       lesson 03's settings and the stand-ins' warm-up
- ``pretrain``        (from notebook 04) the model from its config, the training step and loop
- ``check``           every lab's checks under one name: ``check.prompt_masked(...)``

Importing the package, or its session, data, profile and command modules, imports no heavy library and
changes nothing: no environment variables, seeds or downloads.
"""
