"""course_utils: the shared helpers behind the course "Fine-tuning and Evaluating LLMs".

The notebooks in ``notebooks/`` tell each lesson's story; what two lessons (or a script
launched by ``deepspeed``/``accelerate launch``) need lives here, one module per job:

- ``profiles``    the smoke and full profiles: model names, data sources, sizes, devices
- ``environment`` offline switches and the notebook session (set-up as an explicit call)
- ``data``        loaders for IMDB, CNN/DailyMail and C4, from the Hub or from ``data/``
- ``standins``    tiny stand-in models built from configs, saved and loaded by path
- ``models``      model and tokenizer loading onto the training device; T5 v1.1's untied output layer
- ``hardware``    what device and library stack this machine has; precision and the training device
- ``metrics``     each notebook's key figures, recorded into ``metrics.json``
- ``runner``      executes the notebooks with papermill and writes ``report.md``
- ``hub``         the Hugging Face cache: prefetch, what is there offline, its one-line error
- ``cli``         the ``course`` command

Importing this package changes nothing: no environment variables, seeds or downloads.
"""
