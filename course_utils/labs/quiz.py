"""The labs' multiple-choice questions, each option with its explanation, and the check of an answer.

    print(question_markdown("01L", 1))     # what the lab's markdown cell shows
    question("01L", 1, "c")                # raises CheckFailed with the chosen option's explanation, or prints it

The lab shows each question in a markdown cell (``tests/labs/test_labs.py`` checks that the text is this
table's), and the student sets a variable to a letter; ``check.question`` reports like every other check.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from course_utils.labs.verdict import answer_check, fail, passed


@dataclass(frozen=True)
class Question:
    text: str
    options: tuple[tuple[str, str], ...]  # (option, why it is right or wrong), lettered a, b, c, ...
    key: str  # answer_key(text, the right option's letter): the letter itself is not written anywhere

    def letters(self) -> str:
        return "abcdefgh"[: len(self.options)]

    def is_right(self, letter: str) -> bool:
        return answer_key(self.text, letter) == self.key


def answer_key(text: str, letter: str) -> str:
    """A question's key: a digest of its text and the right letter, so that the letter is in no table a student
    reads. Four letters are quickly tried, so the key keeps the answer out of sight, not secret: a grade must come
    from a grader that holds the letters in its own process."""
    return hashlib.sha256(f"{text}\n{letter}".encode()).hexdigest()[:16]


QUESTIONS = {
    "00L": (
        Question(
            "Mixed-precision AdamW keeps 16 bytes per parameter. Where do 12 of them go?",
            (
                (
                    "Three more bf16 copies of the weights, for the forward, backward and update passes.",
                    "One bf16 copy of the weights serves the forward and backward passes; the update works on fp32.",
                ),
                (
                    "An fp32 master copy of the weights, AdamW's momentum and its variance, 4 bytes each.",
                    "the update needs fp32 precision, so the optimizer keeps three fp32 numbers per parameter.",
                ),
                (
                    "The activations of one row, which the backward pass needs.",
                    "Activations grow with the batch and the row length, not with the parameters; they come on top.",
                ),
                (
                    "The CUDA context and cuBLAS workspaces.",
                    "Those are a fixed few GiB (the rule's buffers), whatever the model's size.",
                ),
            ),
            "b9d11bd94c767216",
        ),
        Question(
            "By the course's rule, what happens to the rows that fit when each row doubles from 512 to 1,024 tokens?",
            (
                (
                    "Nothing: the model's states do not depend on the row length.",
                    "The states do not, but the activations do, and they are what the rows share.",
                ),
                (
                    "They double, since longer rows are fewer rows.",
                    "Longer rows need more memory each, so fewer of them fit, not more.",
                ),
                (
                    "About half as many fit: the rule scales each row's activations with its tokens.",
                    "the memory left after the states is shared by rows whose cost grows linearly with length "
                    "(real attention grows faster still).",
                ),
                (
                    "About a quarter as many fit, because attention is quadratic.",
                    "The course's rule is linear in tokens: at these lengths the feed-forward and projections dominate.",
                ),
            ),
            "b72917463919e402",
        ),
        Question(
            "Why does the rule use only 90 % of the card and subtract 3 GiB more?",
            (
                (
                    "The CUDA context, cuBLAS workspaces and the allocator's fragmentation hold memory no tensor of ours holds.",
                    "a plan that fills the card to the byte fails with an out-of-memory error in the first steps.",
                ),
                (
                    "PyTorch refuses to allocate more than 90 % of a GPU.",
                    "It does not; it allocates until the card is full and then raises.",
                ),
                (
                    "The operating system keeps 10 % of GPU memory for the display.",
                    "Compute nodes have no display; the reserve is for CUDA's own buffers.",
                ),
                (
                    "The optimizer's states are allocated after the first step.",
                    "They are, but the rule counts them already, in the 16 bytes per parameter.",
                ),
            ),
            "ec7cafa339955c2b",
        ),
    ),
    "01L": (
        Question(
            "Why are the prompt's label positions set to -100?",
            (
                (
                    "So that the model never sees the prompt.",
                    "The model reads the whole sequence, prompt included; -100 only keeps it out of the loss.",
                ),
                ("-100 is the id of the padding token.", "It is not a token id at all: it is the loss's ignore_index."),
                (
                    "To save memory in the forward pass.",
                    "The forward pass costs the same; only which positions count in the loss changes.",
                ),
                (
                    "The loss ignores them, so the model learns to write responses, not to repeat instructions.",
                    "cross-entropy's ignore_index is -100, so those positions add nothing to the loss or its gradients.",
                ),
            ),
            "957e3a4fed2aab34",
        ),
        Question(
            "Pythia's tokenizer has no padding token, and the lab pads with EOS. What goes wrong if the labels are "
            "set to -100 wherever input_ids == pad_token_id?",
            (
                (
                    "Nothing: padding is masked, as it should be.",
                    "Padding is masked, but so is every real EOS, since EOS and padding share one id.",
                ),
                (
                    "The EOS that ends each response is masked too, so the model never learns to stop.",
                    "mask the padding by position (the attention mask), not by token id.",
                ),
                (
                    "The prompt is learned as well.",
                    "The prompt is masked by its own rule; this one only touches tokens with the padding id.",
                ),
                (
                    "Training fails with an index error.",
                    "-100 is a valid ignore_index; training runs and the model rambles instead.",
                ),
            ),
            "ade20969eb50d265",
        ),
        Question(
            "LoRA trains two small matrices A (r x in) and B (out x r) beside a frozen weight. Why does B start at zero?",
            (
                (
                    "So that the adapted model starts exactly as the pretrained one, and training moves it from there.",
                    "B A = 0 at the start, so the first forward pass is the base model's.",
                ),
                (
                    "Zero makes the gradients of A vanish, so only B is trained.",
                    "A's gradient is zero only at the very first step; after B moves, both train.",
                ),
                (
                    "To save memory: zeros are stored sparsely.",
                    "PyTorch stores the zeros densely; the saving comes from r being small.",
                ),
                (
                    "It is arbitrary; any small random start would do as well.",
                    "A random B would change the model's outputs before any training, losing what it had learned.",
                ),
            ),
            "dcc3a4a4d55b5a7c",
        ),
    ),
    "02L": (
        Question(
            "Which partition does ZeRO stage 2 add to stage 1?",
            (
                ("The 16-bit weights.", "That is stage 3's addition."),
                ("The activations.", "ZeRO partitions model states; activations are checkpointing's business."),
                ("The 16-bit gradients.", "stage 1 partitions the optimizer states, stage 2 the gradients too."),
                (
                    "Nothing; it only adds CPU offload.",
                    "Offload is a separate option, available from stage 1 for the optimizer.",
                ),
            ),
            "b9f0f8426519bf72",
        ),
        Question(
            "On 64 GPUs and without offload, which stage keeps the fewest bytes of model states per GPU?",
            (
                (
                    "Stage 1: 4 + 12/64 bytes per parameter.",
                    "It keeps the 16-bit weights and gradients whole on every GPU.",
                ),
                ("Stage 2: 2 + 14/64 bytes per parameter.", "It keeps the 16-bit weights whole on every GPU."),
                (
                    "Stage 0, since it has no partitioning overhead.",
                    "Stage 0 keeps all 16 bytes per parameter on every GPU.",
                ),
                (
                    "Stage 3: 16/64 = 0.25 bytes per parameter.",
                    "stage 3 partitions all three kinds of state, so its share keeps shrinking as GPUs are added.",
                ),
            ),
            "54d3432330d4935c",
        ),
        Question(
            "Why try stage 3 with offload only after the others?",
            (
                (
                    "Its model states per GPU are the largest.",
                    "They are the smallest: nothing stays on the GPU between uses.",
                ),
                (
                    "Every step moves the weights and optimizer states across PCIe, so it is the slowest.",
                    "pick the fastest setup whose memory fits, and offload last.",
                ),
                ("It needs NVMe disks.", "It can offload to the CPU's memory; NVMe is an option."),
                ("It cannot run on a single GPU.", "It can; offloading is what lets one GPU hold a large model."),
            ),
            "4ef97c11f363ba31",
        ),
    ),
    "03L": (
        Question(
            "A prediction repeats 'the' four times; the reference has 'the' once. How many times does 'the' count "
            "in ROUGE-1's overlap?",
            (
                (
                    "Four: every predicted unigram found in the reference counts.",
                    "That rewards repetition; ROUGE clips each n-gram's count.",
                ),
                (
                    "Once: each n-gram counts at most as often as it appears in the reference.",
                    "the overlap is the sum over n-grams of min(count in prediction, count in reference).",
                ),
                ("Zero: repeated words are dropped.", "They are not dropped; their count is clipped."),
                (
                    "It depends on stemming.",
                    "'the' is too short to stem (rouge-score stems words longer than 3 letters).",
                ),
            ),
            "4fdbd789bc18ef43",
        ),
        Question(
            "Why must summaries be split one sentence per line for rougeLsum?",
            (
                (
                    "rougeLsum treats each line as a sentence and takes the longest common subsequence per reference sentence;"
                    " on one line it equals rougeL.",
                    "without newlines there is one 'sentence', and the summary-level score collapses to rougeL.",
                ),
                (
                    "rouge-score cannot read text longer than one line.",
                    "It reads any text; newlines only matter to rougeLsum.",
                ),
                ("Newlines are needed for stemming.", "Stemming works word by word, whatever the lines."),
                ("It makes the score faster to compute.", "It changes what is measured, not the speed."),
            ),
            "ceeb40894161cdf9",
        ),
        Question(
            "Why is Lead-3 (the first three sentences) hard to beat on CNN/DailyMail?",
            (
                ("It is trained on the test set.", "Lead-3 has no training at all."),
                ("ROUGE favours short summaries.", "Lead-3 is not short; it is as long as three news sentences."),
                ("ROUGE only counts the first sentence.", "All sentences count."),
                (
                    "News articles put the key facts first, and the highlights restate them.",
                    "the inverted pyramid of news writing makes the lead a strong extractive summary.",
                ),
            ),
            "726ac542fcaede00",
        ),
    ),
    "04L": (
        Question(
            "In span corruption, what does the model see in place of each noise span?",
            (
                (
                    "A single sentinel token, and the targets list each sentinel followed by the tokens it hides.",
                    "inputs keep the clean tokens and one sentinel per span; targets spell out the spans.",
                ),
                (
                    "One mask token per hidden token, as in BERT.",
                    "That is BERT's masking; T5 replaces a whole span with one token.",
                ),
                ("Nothing: the span is deleted.", "Without a sentinel the model would not know where text is missing."),
                ("Random tokens from the vocabulary.", "That is one of BERT's tricks, not T5's."),
            ),
            "129677a2efbc739f",
        ),
        Question(
            "Why warm the learning rate up before the cosine decay?",
            (
                ("To save compute in the first steps.", "Each step costs the same at any rate."),
                ("Because the cosine needs a starting point of zero.", "The cosine starts at the peak rate."),
                (
                    "Early on Adam's second-moment estimates are noisy, and large steps from random weights can diverge.",
                    "a short linear warm-up keeps the first updates small until the statistics settle.",
                ),
                ("To make the loss curve look smoother.", "It changes what is learned, not how it is drawn."),
            ),
            "2a579e3a6b924782",
        ),
        Question(
            "What does AdamW with RMS scaling (nanoT5's optimizer) change in Adam's step?",
            (
                (
                    "It divides the gradient by its RMS before the moments are updated.",
                    "The moments see the raw gradient; the scaling is applied to the step.",
                ),
                (
                    "It replaces the second moment with the weight's RMS.",
                    "The second moment stays; the RMS multiplies the step.",
                ),
                ("It clips each step to an RMS of 1.", "That is Adafactor's update clipping, another idea."),
                (
                    "It multiplies each weight's step by max(1e-3, RMS of that weight), so large weights take larger steps.",
                    "the step is relative to the weight's size, as in Adafactor's scale_parameter.",
                ),
            ),
            "a643fcd8e4f4479b",
        ),
    ),
    "05L": (
        Question(
            "Two summarizers are scored on the same 100 articles. Why resample the articles, both systems' scores "
            "together, rather than each system's scores on its own?",
            (
                (
                    "It is faster: one draw serves both systems.",
                    "It is a little faster, but that is not why: the two ways give different intervals.",
                ),
                (
                    "An article that is hard for one system is hard for the other, so resampling the pairs keeps that "
                    "and measures the spread of the difference itself.",
                    "the shared difficulty cancels in the difference; resampled apart, it is counted as noise.",
                ),
                (
                    "scipy.stats.bootstrap cannot resample two samples apart.",
                    "It can (paired=False); the question is which one measures the difference between the systems.",
                ),
                (
                    "Resampled on its own, each system's interval would come out too narrow.",
                    "Each system's own interval is the same either way; it is the difference's that comes out too "
                    "wide when the pairs are broken.",
                ),
            ),
            "347d277513dbf425",
        ),
        Question(
            "Why does lm-eval's multiple-choice scoring never answer 'unknown', where lesson 01's generate can?",
            (
                (
                    "It generates again until the model writes one of the choices.",
                    "It never generates for a multiple-choice task.",
                ),
                (
                    "It maps an answer outside the choices to the most frequent label.",
                    "There is no answer outside the choices to map: the model only scores the choices offered.",
                ),
                (
                    "It leaves out the rows the model cannot answer.",
                    "Every row is scored; leaving rows out would make the accuracy look better than it is.",
                ),
                (
                    "It scores each given choice by the log-likelihood of its tokens after the prompt and picks the "
                    "highest, so the answer is always one of the choices.",
                    "the model is never asked to write; a model that would ramble still gets its likelier choice.",
                ),
            ),
            "e25e04f243ba1de8",
        ),
        Question(
            "A judge answers 'A' for every pair, in both orders. What is the win rate of the summary shown first in "
            "the first order?",
            (
                (
                    "100 %: it always chose that summary when it came first.",
                    "It chose whatever came first, in both orders: that is position, not preference.",
                ),
                (
                    "50 %: each summary won once per article.",
                    "Counting flipped verdicts as half a win each hides the bias instead of removing it.",
                ),
                (
                    "None: every verdict flips with the order, so none is kept, and there is no rate to give.",
                    "the consistency filter drops every verdict; a rate over zero verdicts does not exist.",
                ),
                (
                    "0 %: the second order's verdict overrides the first.",
                    "Neither order overrides the other; a verdict counts only when both orders agree.",
                ),
            ),
            "20eaf27b30031857",
        ),
    ),
}


def _lookup(lab: str, number: int) -> Question:
    if lab not in QUESTIONS or not 1 <= number <= len(QUESTIONS[lab]):
        raise KeyError(f"No question {number} in lab {lab!r}; labs: {', '.join(QUESTIONS)}.")
    return QUESTIONS[lab][number - 1]


def question_markdown(lab: str, number: int) -> str:
    """The question and its lettered options, as the lab's markdown cell shows them."""
    q = _lookup(lab, number)
    options = "\n".join(f"- **({letter})** {text}" for letter, (text, _) in zip(q.letters(), q.options))
    return f"**Question {number}.** {q.text}\n\n{options}"


def chosen_letter(answer, letters: str) -> str | None:
    """The one letter ``answer`` names ("b", "B", " (b) ", "(B)"), or None for anything else ("", "ab", 2)."""
    if not isinstance(answer, str):
        return None
    choice = answer.strip()
    if len(choice) == 3 and choice[0] == "(" and choice[2] == ")":
        choice = choice[1]
    choice = choice.lower()
    return choice if len(choice) == 1 and choice in letters else None


@answer_check
def question(lab: str, number: int, answer) -> None:
    """Check the letter chosen for a question: raise with the option's explanation, or print it."""
    q = _lookup(lab, number)
    name = f"question {number}"
    letters = q.letters()
    if answer is Ellipsis or answer is None:
        fail(
            name,
            f"one of {', '.join(letters)}",
            "no answer yet",
            f'set q{number} to the letter you choose, e.g. q{number} = "a"',
        )
    choice = chosen_letter(answer, letters)
    if choice is None:
        fail(name, f"one of {', '.join(letters)}", repr(answer), 'answer with one option\'s letter, e.g. "a"')
    text, why = q.options[letters.index(choice)]
    if not q.is_right(choice):
        fail(name, "another option", f"({choice}) {text}", why)
    passed(name, f"({choice}) Right: {why}")
