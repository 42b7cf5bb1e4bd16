"""course_utils: the package behind the course "Fine-tuning and Evaluating LLMs".

The notebooks in ``notebooks/`` show each lesson's code; this package holds what they, the launchers and the
tests import. Its folders say what kind of module stands in them, and ``course_utils/README.md`` is the map of
every module (``tests/test_package_map.py`` holds it to the files):

- ``from_notebooks/``   written from the lessons' ``#@save`` cells by ``python tools/export.py``; never edited by hand
- ``lessons/``          the lessons' hand-written support: the fine-tune command, ZeRO's configs, settings
- ``pretraining/``      lesson 04's pretraining run, a module a job
- ``labs/``             the labs' checks and questions, and the grading of a class's labs
- ``models_and_data/``  models, tokenizers and data sets: from the Hub, its cache, ``data/`` or ``standins/``
- ``standins/``         the smoke profile's stand-in models: their recipes and their build
- ``machinery/``        the course's machinery: paths, offline switches, profiles, the session, generation, ROUGE,
                        metrics, the runner, the site

Importing the package imports no heavy library and changes nothing but one entry of ``sys.meta_path``: the finder
that keeps the flat layout's module names working for one release, with a warning (``machinery/moved.py``).
"""

from course_utils.machinery import moved

moved.install()
