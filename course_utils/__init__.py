"""course_utils: the shared helpers behind the course "Fine-tuning and Evaluating LLMs".

The notebooks in ``notebooks/`` tell each lesson's story; what two lessons (or a script
launched by ``deepspeed``/``accelerate launch``) need lives here, one module per job, in five
floors: a module imports only modules on the floors below its own (tests/test_repository.py).

1. Leaves, which import nothing of the package:
- ``paths``           where the repository, outputs and caches are
- ``configs``         checked overrides of typed configs, ``--help`` from field comments, one-line errors
- ``offline``         the offline switches, stand-in names, the missing-asset error
- ``tokens``          pairs tokenized for training, documents packed into rows, batched generation
- ``metrics``         each notebook's key figures, recorded into ``metrics.json``
- ``rouge``           ROUGE-1/2/L/Lsum, sentence splitting
- ``optim``           AdamW with RMS scaling, Adafactor, the cosine and inverse-square-root schedules
- ``span_corruption`` T5's span-corruption objective
- ``memory``          how many rows fit in GPU memory, and each run's peak memory
2. Settings and the machine:
- ``profiles``        the smoke and full profiles: model names, data sources, each lesson's settings
- ``hardware``        device, precision (the one rule), library versions, matmul rate, TF32, compile check
- ``hub``             the Hugging Face cache: prefetch and what is there offline
- ``standins``        tiny stand-in models built from configs, saved and loaded by path
- ``sentiment``       IMDB as text-to-text: label words, checks, classification, accuracy
- ``runner``          executes the notebooks with papermill and writes ``report.md``
3. Loading and launching:
- ``environment``     a notebook's session: offline switches, one GPU, the output folder
- ``data``            IMDB, CNN/DailyMail and C4 from the Hub or ``data/``; the one reader of local files
- ``models``          models and tokenizers onto the training device; T5 v1.1's untied output layer
- ``zero``            DeepSpeed configs checked, launcher variables, model-state memory per ZeRO stage
- ``cli``             the ``course`` command
4. Lessons:
- ``finetune``        lesson 01's fine-tune (and 02's and 04's repeats of it), command line included
- ``summarize``       lesson 03's summaries, warm-ups and their scores
- ``pretrain_data``   lesson 04's span-corrupted batches, made in DataLoader workers, resumable
5. ``pretrain``        lesson 04's pretraining run, command line included

Importing this package changes nothing: no environment variables, seeds or downloads.
"""
