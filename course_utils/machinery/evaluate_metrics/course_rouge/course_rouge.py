"""ROUGE-1/2/L/Lsum as an `evaluate` metric that loads from this folder, with no Hub access.

    import evaluate
    rouge = evaluate.load(course_utils.machinery.rouge.rouge_metric_path())
    rouge.compute(predictions=[...], references=[...])   # {"rouge1": 0.41, ...}, mean F

It scores with course_utils.machinery.rouge, that is with rouge-score. Unlike the Hub's "rouge" metric it stems by default and aggregates with a plain
mean instead of an unseeded bootstrap, so the same inputs always give the same figures.
"""

import datasets
import evaluate

from course_utils.machinery.rouge import ROUGE_TYPES, aggregate, check_pairs, score_pairs


class CourseRouge(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__,
            citation="Lin, C.-Y. (2004). ROUGE: A Package for Automatic Evaluation of Summaries.",
            inputs_description="predictions and references: lists of strings, one sentence per line "
            "for rougeLsum; rouge_types, use_stemmer (default True), "
            "use_aggregator (default True: mean F per type; False: per-row F lists).",
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """ROUGE F-measures of ``predictions`` against ``references``."""
        # Check here, so a bad row is named before evaluate's own encoding fails on it.
        check_pairs(predictions, references)
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, rouge_types=ROUGE_TYPES, use_stemmer=True, use_aggregator=True):
        scores = score_pairs(predictions, references, rouge_types, use_stemmer)
        if use_aggregator:
            return aggregate(scores)
        return {t: [s[t].fmeasure for s in scores] for t in rouge_types}
