"""Models, tokenizers and data sets, from the Hugging Face Hub, its cache, the shipped ``data/`` or ``standins/``.

Every loader checks what it reads and names the row, the column or the missing file. The map of every module is
``course_utils/README.md``.
"""
