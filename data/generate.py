"""Write the course's synthetic sample data sets into data/.

The smoke profile cannot reach the Hugging Face Hub, so it reads small stand-ins for
IMDB, CNN/DailyMail, C4, Dolly-15k, LAMBADA and SST-2 from this folder. They are written here, from word lists and
sentence templates of the project's own. Each data set's split draws from a random generator
of its own, seeded by the split's name: the same command always writes the same bytes, and a
change to one set leaves the others as they were.

    python data/generate.py            # (re)write data/{imdb,cnn_dailymail,c4,dolly,lambada,sst2}/*.jsonl
    python data/generate.py --check    # exit 1 if the committed files differ from a fresh run

Only the standard library is used, so the generator runs before anything is installed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
from pathlib import Path

SEED = 20261202
DATA_DIR = Path(__file__).resolve().parent

# Rows per split. IMDB's real splits are 25k/25k/50k, CNN/DailyMail's 287k/13k/11k and
# C4 en's 365M/365k: these are small enough for a 2-core CPU and big enough to learn from.
SIZES = {
    "imdb": {"train": 2000, "test": 500, "unsupervised": 300},
    "cnn_dailymail": {"train": 400, "validation": 50, "test": 50},
    "c4": {"train": 3000, "validation": 200},
    # databricks-dolly-15k has one split of 15,011 rows; lab 01L holds its own test rows out of it.
    "dolly": {"train": 600},
    # EleutherAI/lambada_openai has one split, test; the stand-ins' training stories are a split of their own
    # (LAMBADA's authors, too, drew their test passages from novels and trained on other novels).
    "lambada": {"test": 200, "train": 1000},
    # stanfordnlp/sst2 (GLUE's SST-2): train 67,349 short sentences from film reviews. The T5 stand-ins learn the
    # `sst2 sentence: ` task from it, as the real T5 did in its multi-task mixture; no lesson scores it.
    "sst2": {"train": 20000},
}

# --------------------------------------------------------------------------- word lists

FIRST_NAMES = """Ada Alan Amara Anders Beatriz Bilal Carmen Chen Dalia Dmitri Elena Emeka Farah
Felix Grace Gustavo Hana Hugo Ines Ivan Jamal Jonas Keiko Kofi Lara Lucas Maya Mateo Nadia
Nikolai Olga Omar Priya Rafael Rosa Samir Sofia Tariq Tessa Ugo Vera Wendell Yara Zoran""".split()
LAST_NAMES = """Abbott Bauer Castillo Dlamini Eriksen Ferreira Gallagher Haddad Ibarra Jensen
Kowalski Lindqvist Moreau Nakamura Okafor Petrov Quinn Rahman Santos Takahashi Underwood Varga
Whitfield Xu Yilmaz Zimmermann Brennan Costa Duarte Fischer""".split()
PLACES = """Lisbon Oslo Marseille Nairobi Montreal Kyoto Valparaiso Tallinn Glasgow Adelaide
Seville Krakow Halifax Accra Bergen Porto Tucson Dundee Utrecht Leeds Hobart Ghent""".split()

TITLE_ADJ = """Last Silent Broken Hidden Distant Crimson Frozen Golden Hollow Quiet Burning
Lonely Restless Forgotten Midnight Northern Paper Glass Iron Winter""".split()
TITLE_NOUN = """Harbor Orchard Signal Witness Garden Station Tide Letter Kingdom Lantern
Horizon Bridge Promise Summer Circus Machine River Ghost Frontier Symphony""".split()
GENRES = [
    "drama",
    "thriller",
    "comedy",
    "romance",
    "western",
    "horror film",
    "mystery",
    "musical",
    "documentary",
    "war film",
    "science-fiction film",
    "animated feature",
    "crime story",
    "coming-of-age story",
    "heist movie",
    "period piece",
]
OCCUPATIONS = [
    "retired detective",
    "young nurse",
    "struggling painter",
    "ship captain",
    "school teacher",
    "jazz pianist",
    "small-town lawyer",
    "war veteran",
    "chemistry student",
    "lighthouse keeper",
    "widowed farmer",
    "night-shift cook",
    "disgraced journalist",
    "professional boxer",
    "museum guard",
]
PLOT_EVENTS = [
    "inherits a house full of secrets",
    "tries to win back an estranged brother",
    "is drawn into a smuggling ring",
    "searches for a missing daughter",
    "agrees to one last job",
    "falls for a stranger on a night train",
    "must testify against an old friend",
    "discovers a letter that changes everything",
    "returns home after twenty years",
    "is hunted across a frozen valley",
    "starts a band with three misfits",
    "uncovers a scandal at the town hall",
]
PERIODS = [
    "the nineteen-twenties",
    "the last winter of the war",
    "a single weekend",
    "the present day",
    "the late sixties",
    "a long heatwave",
    "the near future",
]
ASPECTS = [
    "the acting",
    "the script",
    "the soundtrack",
    "the cinematography",
    "the pacing",
    "the dialogue",
    "the ending",
    "the visual effects",
    "the lead performance",
    "the supporting cast",
    "the direction",
    "the editing",
    "the humour",
    "the plot",
    "the set design",
    "the score",
    "the final act",
    "the chemistry between the leads",
]
POS_ADJ = [
    "brilliant",
    "moving",
    "gripping",
    "superb",
    "charming",
    "delightful",
    "clever",
    "haunting",
    "beautiful",
    "funny",
    "tense",
    "memorable",
    "wonderful",
    "sharp",
    "heartfelt",
    "stunning",
    "excellent",
    "engaging",
    "powerful",
    "fresh",
]
NEG_ADJ = [
    "dull",
    "clumsy",
    "tedious",
    "bland",
    "predictable",
    "awful",
    "lifeless",
    "messy",
    "forgettable",
    "shallow",
    "boring",
    "overlong",
    "wooden",
    "confusing",
    "lazy",
    "pointless",
    "cheap",
    "flat",
    "grating",
    "dreadful",
]
INTENSIFIERS = ["", "", "", "really ", "truly ", "genuinely ", "simply ", "utterly ", "quite ", "remarkably "]
CONTEXTS = [
    "on a rainy Sunday afternoon",
    "with my parents",
    "at a festival screening",
    "on a long flight",
    "after a friend recommended it",
    "on late-night television",
    "in an almost empty cinema",
    "twice in one week",
    "on a cheap rental",
]

# --------------------------------------------------------------------------- helpers


def pick(rng: random.Random, items):
    return items[rng.randrange(len(items))]


def cap(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


def a_an(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def person(rng: random.Random) -> str:
    return f"{pick(rng, FIRST_NAMES)} {pick(rng, LAST_NAMES)}"


def film_title(rng: random.Random) -> str:
    forms = ["The {a} {n}", "{a} {n}", "A {n} in {p}", "The {n} of {p}", "{n}"]
    return pick(rng, forms).format(a=pick(rng, TITLE_ADJ), n=pick(rng, TITLE_NOUN), p=pick(rng, PLACES))


def distinct(rng: random.Random, make, n: int) -> list[str]:
    """Up to n different sentences from make(rng); real texts rarely repeat a sentence."""
    out: list[str] = []
    for _ in range(n * 5):
        if len(out) == n:
            break
        sentence = make(rng)
        if sentence not in out:
            out.append(sentence)
    return out


def lognormal_int(rng: random.Random, median: float, sigma: float, low: int, high: int) -> int:
    return max(low, min(high, int(round(median * math.exp(rng.gauss(0.0, sigma))))))


# --------------------------------------------------------------------------- IMDB


def sentiment_cue(rng: random.Random, polarity: int) -> str:
    """One sentence whose sentiment is `polarity` (+1 or -1); a third of them through negation."""
    negate = rng.random() < 0.3
    # Negated cues use the opposite word: "not dull" reads positive, "not clever" negative.
    word_sign = -polarity if negate else polarity
    adj = pick(rng, POS_ADJ if word_sign > 0 else NEG_ADJ)
    aspect = pick(rng, ASPECTS)
    actor = person(rng)
    if negate:
        forms = [
            f"{cap(aspect)} is not {adj} at all.",
            f"I would never call {aspect} {adj}.",
            f"{cap(aspect)} was hardly {adj}.",
            f"Nobody could say {aspect} is {adj}.",
            f"{cap(aspect)} is not exactly {adj}, whatever the poster claims.",
            f"{actor} is anything but {adj} in the main role.",
            f"Don't expect {aspect} to be {adj}.",
        ]
        if polarity > 0:
            forms += [
                "I did not regret a single minute of it.",
                "It never once bored me.",
                "I can't remember the last time I laughed this hard.",
            ]
        else:
            forms += [
                "I did not enjoy a single minute of it.",
                "It never once held my attention.",
                "I can't recommend it to anyone.",
            ]
    else:
        inten = pick(rng, INTENSIFIERS)
        forms = [
            f"{cap(aspect)} is {inten}{adj}.",
            f"{actor} gives {a_an(adj)} performance.",
            f"I found {aspect} {inten}{adj}.",
            f"What {a_an(adj)} film this is.",
            f"{cap(aspect)} felt {inten}{adj} from start to finish.",
        ]
        if polarity > 0:
            forms += [
                "I loved every minute of it.",
                "It is one of the best films I have seen this year.",
                f"It is far better than {film_title(rng)}.",
                "I would happily watch it again.",
                "The audience applauded at the end.",
            ]
        else:
            forms += [
                "I wanted my money back.",
                "It is one of the worst films I have seen this year.",
                f"It is a poor copy of {film_title(rng)}.",
                "I almost walked out halfway through.",
                "Who thought this was a good idea?",
            ]
    return pick(rng, forms)


def neutral_sentence(rng: random.Random, title: str) -> str:
    forms = [
        f"{person(rng)} plays a {pick(rng, OCCUPATIONS)} who {pick(rng, PLOT_EVENTS)}.",
        f"The story is set in {pick(rng, PLACES)} during {pick(rng, PERIODS)}.",
        f"I watched {title} {pick(rng, CONTEXTS)}.",
        f"It was directed by {person(rng)} and runs about {rng.randint(85, 175)} minutes.",
        f"Fans of the {pick(rng, GENRES)} will recognise the set-up.",
        f"Most of it was shot in {pick(rng, PLACES)}.",
        f"The second half follows {pick(rng, FIRST_NAMES)}, the {pick(rng, OCCUPATIONS)}'s "
        f"{pick(rng, ['sister', 'neighbour', 'rival', 'old teacher', 'son'])}.",
        f"It is based on a novel by {person(rng)}.",
        f"There is a long scene in a {pick(rng, ['train station', 'hospital', 'church', 'diner', 'courtroom'])} "
        f"that the whole film builds towards.",
        "I had read nothing about it beforehand.",
        f"My {pick(rng, ['brother', 'wife', 'husband', 'friend', 'daughter'])} had seen it before me.",
        "The trailer gives away more than it should.",
        f"{person(rng)} wrote the music.",
    ]
    return pick(rng, forms)


def verdict(rng: random.Random, polarity: int) -> str:
    score = rng.randint(7, 10) if polarity > 0 else rng.randint(1, 4)
    pos = [
        "Overall, well worth your time.",
        "Highly recommended.",
        "Go and see it.",
        f"{score}/10.",
        f"{score} out of 10 from me.",
        "A small gem.",
    ]
    neg = [
        "Overall, a waste of time.",
        "Skip this one.",
        "Avoid it.",
        f"{score}/10.",
        f"{score} out of 10 from me.",
        "A real disappointment.",
    ]
    return pick(rng, pos if polarity > 0 else neg)


def imdb_review(rng: random.Random, label: int) -> str:
    polarity = 1 if label == 1 else -1
    title = film_title(rng)
    n_main = rng.randint(3, 6)
    # Mixed reviews: a third carry one or two cues of the other side, but always fewer.
    n_other = rng.choice([1, 1, 2]) if rng.random() < 0.35 else 0
    n_other = min(n_other, n_main - 1)
    cues = [(sentiment_cue(rng, polarity), polarity) for _ in range(n_main)]
    cues += [(sentiment_cue(rng, -polarity), -polarity) for _ in range(n_other)]
    rng.shuffle(cues)
    # Lengths like IMDB's: median about 150 words, with a tail that runs past 512 tokens.
    n_neutral = lognormal_int(rng, median=10, sigma=0.8, low=1, high=90)
    sentences = [s for s, _ in cues] + distinct(rng, lambda r: neutral_sentence(r, title), n_neutral)
    rng.shuffle(sentences)
    if n_other and rng.random() < 0.6:
        # Make the contrast explicit: "Sure, <other side>, but <main side>."
        other = next(s for s, p in cues if p != polarity)
        main = next(s for s, p in cues if p == polarity)
        sentences = [s for s in sentences if s not in (other, main)]
        sentences.insert(
            rng.randint(0, len(sentences)),
            f"{pick(rng, ['Sure', 'Admittedly', 'Granted', 'True'])}, "
            f"{other[0].lower() + other[1:-1]}, but {main[0].lower() + main[1:]}",
        )
    if rng.random() < 0.7:
        sentences.append(verdict(rng, polarity))
    # IMDB's reviews keep HTML line breaks between paragraphs; many of ours do too.
    paragraphs, size = [], rng.randint(3, 6)
    for i in range(0, len(sentences), size):
        paragraphs.append(" ".join(sentences[i : i + size]))
    joiner = "<br /><br />" if rng.random() < 0.5 else " "
    return joiner.join(paragraphs)


def imdb_split(rng: random.Random, n: int, labelled: bool) -> list[dict]:
    labels = [i % 2 for i in range(n)]  # exactly balanced
    rng.shuffle(labels)
    return [{"text": imdb_review(rng, lab), "label": lab if labelled else -1} for lab in labels]


# --------------------------------------------------------------------------- CNN/DailyMail

WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
PURPOSES = [
    "road repairs",
    "new school buildings",
    "public parks",
    "flood defences",
    "bus services",
    "affordable housing",
    "the city library",
]
TEAMS = [
    "Harbor City Rovers",
    "Northfield United",
    "Eastbrook Athletic",
    "Riverside Wanderers",
    "Kingsport Falcons",
    "Westvale Rangers",
    "Millbrook Town",
    "Stonegate Albion",
]
COMPANIES = [
    "Brightline Appliances",
    "Norvik Motors",
    "Calder Toys",
    "Hestia Home",
    "Pellon Electronics",
    "Marlow Foods",
    "Arden Cycles",
]
PRODUCTS = [
    ("space heaters", "can overheat and start a fire"),
    ("child car seats", "have a buckle that can come loose"),
    ("electric scooters", "have batteries that may swell"),
    ("baby monitors", "contain a cable that can overheat"),
    ("pressure cookers", "have lids that can burst open"),
    ("mountain bikes", "have a fork that may crack"),
]
FINDINGS = [
    ("a new species of frog", "in the cloud forest", "its bright blue throat"),
    ("an ancient shipwreck", "off the northern coast", "a cargo of clay jars"),
    ("a planet twice the size of Earth", "orbiting a nearby star", "signs of water vapour"),
    ("a colony of rare bats", "in an abandoned mine", "an unusual winter call"),
    ("a fossilised forest", "beneath a melting glacier", "tree stumps 9,000 years old"),
]
UNIVERSITIES = [
    "the University of Halden",
    "Marston Institute of Technology",
    "Clearwater University",
    "the Royal College of Eastmere",
]


def money(rng: random.Random) -> str:
    return f"${rng.randint(12, 480)} million"


def council_story(rng: random.Random) -> tuple[list[str], list[str]]:
    city, amount, purpose = pick(rng, PLACES), money(rng), pick(rng, PURPOSES)
    yes, no = rng.randint(7, 12), rng.randint(1, 6)
    mayor, critic, day = person(rng), person(rng), pick(rng, WEEKDAYS)
    critique = pick(
        rng,
        [
            "leaves too little for emergencies",
            "raises property taxes too far",
            "ignores the poorer districts",
            "relies on optimistic forecasts",
        ],
    )
    paragraphs = [
        f"The city council in {city} voted {yes} to {no} on {day} to approve a budget of {amount}, "
        f"with the largest share going to {purpose}.",
        f"Mayor {mayor} said the vote was 'a promise kept' and that work would begin within months. "
        f"'People have waited long enough,' {mayor.split()[0]} told reporters outside the chamber.",
        f"Not everyone was pleased. Councillor {critic} argued that the plan {critique}, "
        "and promised to keep pushing for changes.",
        f"The debate lasted more than {rng.randint(3, 9)} hours and drew a crowd of residents, "
        f"some holding signs about {pick(rng, PURPOSES)}.",
        "Last year's budget was smaller, and several projects were delayed after costs rose.",
        "The spending plan now goes to the regional government for a final review, "
        "which is expected by the end of the month.",
    ]
    highlights = [
        f"{city} council backs {amount} budget in {yes}-{no} vote.",
        f"Biggest slice of the money is set aside for {purpose}.",
        f"Councillor {critic} says the plan {critique}.",
    ]
    return paragraphs, highlights


def storm_story(rng: random.Random) -> tuple[list[str], list[str]]:
    region, speed = pick(rng, PLACES), rng.randint(90, 190)
    homes, injured = rng.randint(3, 95) * 1000, rng.randint(2, 40)
    expert, day = person(rng), pick(rng, WEEKDAYS)
    paragraphs = [
        f"A powerful storm swept across the coast near {region} on {day}, bringing winds of up to "
        f"{speed} km/h and leaving about {homes:,} homes without electricity.",
        f"Emergency services said {injured} people were treated for injuries, most of them minor, "
        f"after trees fell onto roads and cars.",
        f"Forecaster {expert} said the storm had strengthened quickly over warm water. "
        f"'We expect the wind to ease by tomorrow morning, but the rain will continue,' "
        f"{expert.split()[0]} said.",
        "Schools in the area were closed and ferry services were cancelled until further notice.",
        "Repair crews from neighbouring regions have been sent to help restore power, "
        "a job that could take several days.",
    ]
    highlights = [
        f"Storm hits coast near {region} with winds of {speed} km/h.",
        f"Some {homes:,} homes lose power and {injured} people are hurt.",
        "Schools shut and ferries cancelled as repair crews move in.",
    ]
    return paragraphs, highlights


def sport_story(rng: random.Random) -> tuple[list[str], list[str]]:
    home, away = rng.sample(TEAMS, 2)
    a, b = rng.randint(2, 5), rng.randint(0, 1)
    star, coach, crowd = person(rng), person(rng), rng.randint(18, 80) * 1000
    minute = rng.randint(60, 89)
    paragraphs = [
        f"{home} won the cup final on {pick(rng, WEEKDAYS)}, beating {away} {a}-{b} in front of {crowd:,} fans.",
        f"{star} scored twice, including a header in the {minute}th minute that settled the match.",
        f"'I have dreamed about this since I was a child,' {star.split()[0]} said after the game, "
        f"still holding the trophy.",
        f"{away} had the better of the opening half hour but could not turn pressure into goals.",
        f"Coach {coach} praised the team's patience. 'We stayed calm and waited for our moment,' "
        f"{coach.split()[0]} said.",
        f"It is the club's first major trophy in {rng.randint(8, 40)} years.",
    ]
    highlights = [
        f"{home} beat {away} {a}-{b} to lift the cup.",
        f"Two goals from {star}, the second in minute {minute}.",
        f"First major title for the club in years, says coach {coach}.",
    ]
    return paragraphs, highlights


def recall_story(rng: random.Random) -> tuple[list[str], list[str]]:
    company = pick(rng, COMPANIES)
    product, defect = pick(rng, PRODUCTS)
    units, reports = rng.randint(20, 900) * 1000, rng.randint(5, 120)
    spokesperson = person(rng)
    paragraphs = [
        f"{company} is recalling about {units:,} {product} because they {defect}, "
        f"the company said on {pick(rng, WEEKDAYS)}.",
        f"The firm has received {reports} reports of problems, according to a statement "
        f"published alongside the national consumer safety agency.",
        f"Customers are being told to stop using the {product} at once and to contact the company "
        f"for a free repair or a full refund.",
        f"Spokesperson {spokesperson} said safety was 'our first priority' and apologised for the inconvenience.",
        "The affected models were sold in shops and online over the past two years.",
    ]
    highlights = [
        f"{company} recalls {units:,} {product}.",
        f"The products {defect}; {reports} problems reported so far.",
        "Owners should stop using them and ask for a refund or repair.",
    ]
    return paragraphs, highlights


def science_story(rng: random.Random) -> tuple[list[str], list[str]]:
    finding, where, detail = pick(rng, FINDINGS)
    uni, lead = pick(rng, UNIVERSITIES), person(rng)
    years = rng.randint(2, 9)
    paragraphs = [
        f"Researchers from {uni} say they have found {finding} {where}, a discovery described "
        f"this week in a scientific journal.",
        f"The team, led by {lead}, spent {years} years on the project before the find was confirmed.",
        f"What surprised them most was {detail}. 'We had to check our results three times,' {lead.split()[0]} said.",
        "Other scientists called the work careful but said more study was needed "
        "before firm conclusions could be drawn.",
        "The group now plans a second expedition next year.",
    ]
    highlights = [
        f"Team from {uni} reports {finding} {where}.",
        f"Project led by {lead} took {years} years.",
        f"Scientists were surprised by {detail}.",
    ]
    return paragraphs, highlights


STORY_KINDS = [council_story, storm_story, sport_story, recall_story, science_story]
FILLERS = [
    "Officials said more details would be released later in the week.",
    "The announcement was shared widely on social media within hours.",
    "Local newspapers had reported on the issue for several months.",
    "A full statement is available on the organisation's website.",
    "Similar cases have been reported in other parts of the country.",
    "Residents interviewed on Tuesday gave mixed reactions.",
]


def cnn_story(rng: random.Random, split: str, index: int) -> dict:
    paragraphs, highlights = pick(rng, STORY_KINDS)(rng)
    body = list(paragraphs)
    for filler in distinct(rng, lambda r: pick(r, FILLERS), rng.randint(0, 3)):
        body.insert(rng.randint(1, len(body)), filler)
    if rng.random() < 0.5:
        lead = f"{pick(rng, PLACES).upper()} (CNN) -- {body[0]}"
    else:
        lead = f"By . {person(rng)} . PUBLISHED: . {rng.randint(1, 28)} {pick(rng, ['May', 'June', 'July'])} 2014 . | . {body[0]}"
    article = "\n\n".join([lead] + body[1:])
    if rng.random() < 0.3:
        highlights = highlights[:2]
    return {
        "article": article,
        "highlights": "\n".join(highlights),
        "id": hashlib.sha1(f"sample-cnn-{split}-{index}".encode()).hexdigest(),
    }


# --------------------------------------------------------------------------- C4

DISHES = ["lemon chicken", "lentil soup", "banana bread", "vegetable curry", "apple pie", "fish tacos"]
INGREDIENTS = [
    "two cloves of garlic",
    "a cup of flour",
    "a pinch of salt",
    "three ripe tomatoes",
    "a tablespoon of olive oil",
    "half a cup of sugar",
    "a handful of fresh basil",
]
GADGETS = ["wireless speaker", "desk lamp", "travel backpack", "coffee grinder", "running watch", "water bottle"]
FEATURES = [
    "a battery that lasts all week",
    "a solid aluminium frame",
    "three brightness settings",
    "a waterproof finish",
    "a lifetime warranty",
    "a quiet motor",
]
ACTIVITIES = [
    "hiking along the old canal",
    "visiting the covered market",
    "a boat trip around the bay",
    "the cathedral tower",
    "a cooking class",
    "cycling between the villages",
]
TASKS = [
    "fix a dripping tap",
    "repot a houseplant",
    "clean a cast iron pan",
    "back up your phone",
    "paint a wooden fence",
    "set up a compost bin",
]
TLDS = ["com", "org", "net", "co.uk", "info"]
SITE_WORDS = ["daily", "green", "home", "kitchen", "travel", "maker", "north", "simple", "bright", "local"]


def c4_recipe(rng):
    dish = pick(rng, DISHES)
    lines = [
        f"This {dish} is the dish my family asks for every {pick(rng, WEEKDAYS)}.",
        f"You will need {pick(rng, INGREDIENTS)}, {pick(rng, INGREDIENTS)} and {pick(rng, INGREDIENTS)}.",
    ]
    lines += distinct(
        rng,
        lambda r: pick(
            r,
            [
                f"Heat the oven to {r.randint(16, 22) * 10} degrees.",
                f"Stir for {r.randint(2, 15)} minutes until golden.",
                "Season to taste and leave to rest before serving.",
                f"Add {pick(r, INGREDIENTS)} and mix well.",
                "Cover the pan and let it simmer on a low heat.",
            ],
        ),
        rng.randint(2, 5),
    )
    lines.append("Leave a comment below if you try it!")
    return dish, lines


def c4_product(rng):
    gadget = pick(rng, GADGETS)
    lines = [
        f"Meet the new {gadget} from {pick(rng, COMPANIES)}.",
        f"It comes with {pick(rng, FEATURES)} and {pick(rng, FEATURES)}.",
        f"Orders over ${rng.randint(25, 99)} ship free.",
        pick(rng, ["Available in four colours.", "Rated 4.7 stars by our customers.", "Free returns within 30 days."]),
    ]
    return gadget, lines


def c4_travel(rng):
    city = pick(rng, PLACES)
    lines = [
        f"We spent {rng.randint(2, 10)} days in {city} last {pick(rng, ['spring', 'summer', 'autumn', 'winter'])}."
    ]
    lines += distinct(
        rng,
        lambda r: pick(
            r,
            [
                f"The highlight was {pick(r, ACTIVITIES)}.",
                "Our hotel was close to the station, which made early starts easy.",
                "Book tickets in advance, because queues get long after ten.",
                "The food was cheaper than we expected.",
                f"If you have an extra day, take the train to {pick(r, PLACES)}.",
            ],
        ),
        rng.randint(2, 5),
    )
    return f"{city} travel guide", lines


def c4_howto(rng):
    task = pick(rng, TASKS)
    lines = [f"Here is how to {task} in under an hour."]
    steps = distinct(
        rng,
        lambda r: pick(
            r,
            [
                "gather your tools before you start.",
                "turn off the water supply first.",
                "work slowly and check each part as you go.",
                "wipe everything down with a dry cloth.",
                "wait a few hours before using it again.",
            ],
        ),
        rng.randint(2, 5),
    )
    lines += [f"Step {n}: {step}" for n, step in enumerate(steps, start=1)]
    lines.append(f"Questions? Email {pick(rng, FIRST_NAMES).lower()}@example.com.")
    return task, lines


def c4_opinion(rng):
    # Real C4 holds plenty of opinionated web text (blogs, film notes, forum posts); this is
    # where a pretrained T5 meets words like "superb" and "dull" before any sentiment task.
    title, polarity = film_title(rng), rng.choice([1, -1])
    lines = [
        pick(
            rng,
            [
                f"My thoughts on {title}, the new {pick(rng, GENRES)}.",
                f"Film notes: {title}.",
                f"Weekend viewing: {title}.",
            ],
        )
    ]
    lines += [sentiment_cue(rng, polarity) for _ in range(rng.randint(2, 4))]
    lines.insert(rng.randint(1, len(lines)), neutral_sentence(rng, title))
    lines.append(verdict(rng, polarity))
    return f"{title} review", lines


def c4_doc(rng: random.Random) -> dict:
    # Opinion pages weigh three times: real C4 is full of blogs, reviews and forum posts that take a side.
    topic, lines = pick(rng, [c4_recipe, c4_product, c4_travel, c4_howto, c4_opinion, c4_opinion, c4_opinion])(rng)
    site = f"{pick(rng, SITE_WORDS)}{pick(rng, SITE_WORDS)}.{pick(rng, TLDS)}"
    slug = "-".join(topic.lower().split())
    stamp = (
        f"2019-04-{rng.randint(18, 26):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
    )
    return {"text": "\n".join(lines), "timestamp": stamp, "url": f"https://{site}/{slug}-{rng.randint(100, 9999)}"}


# --------------------------------------------------------------------------- Dolly-15k

# Dolly's eight categories, each a task with short answers whose words recur, so that a tiny model
# trained for a minute learns the answer's shape and its ROUGE against the reference rises.
CAPITALS = [
    ("France", "Paris"),
    ("Kenya", "Nairobi"),
    ("Japan", "Tokyo"),
    ("Chile", "Santiago"),
    ("Norway", "Oslo"),
    ("Canada", "Ottawa"),
    ("Portugal", "Lisbon"),
    ("Ghana", "Accra"),
    ("Estonia", "Tallinn"),
    ("Poland", "Warsaw"),
    ("Peru", "Lima"),
    ("Egypt", "Cairo"),
]
SEASONS = ["spring", "summer", "autumn", "winter"]


def dolly_row(rng: random.Random) -> dict:
    category = pick(
        rng,
        [
            "open_qa",
            "closed_qa",
            "classification",
            "information_extraction",
            "summarization",
            "brainstorming",
            "creative_writing",
            "general_qa",
        ],
    )
    context = ""
    if category == "open_qa":
        country, city = pick(rng, CAPITALS)
        instruction, response = f"What is the capital of {country}?", f"The capital of {country} is {city}."
    elif category == "closed_qa":
        name, place, job = person(rng), pick(rng, PLACES), pick(rng, OCCUPATIONS)
        context = f"{name} is {a_an(job)} who lives in {place}."
        instruction, response = f"Where does {name.split()[0]} live?", f"{name.split()[0]} lives in {place}."
    elif category == "classification":
        polarity = rng.choice([1, -1])
        adjective = pick(rng, POS_ADJ if polarity > 0 else NEG_ADJ)
        context = f"I thought {pick(rng, ASPECTS)} of {film_title(rng)} was {adjective}."
        instruction = "Is this review positive or negative?"
        response = f"The review is {'positive' if polarity > 0 else 'negative'}."
    elif category == "information_extraction":
        company, (product, defect) = pick(rng, COMPANIES), pick(rng, PRODUCTS)
        units = rng.randint(2, 90) * 1000
        context = f"{company} is recalling {units:,} {product} because they {defect}."
        instruction, response = "Which company is recalling products?", f"{company} is recalling {product}."
    elif category == "summarization":
        paragraphs, highlights = pick(rng, STORY_KINDS)(rng)
        context = " ".join(paragraphs[:3])
        instruction, response = "Summarize this text in one sentence.", highlights[0]
    elif category == "brainstorming":
        city = pick(rng, PLACES)
        ideas = distinct(rng, lambda r: pick(r, ACTIVITIES), 3)
        instruction = f"Give me three things to do in {city}."
        response = f"In {city} you could try {ideas[0]}, {ideas[1]} or {ideas[2]}."
    elif category == "creative_writing":
        place, season = pick(rng, PLACES), pick(rng, SEASONS)
        instruction = f"Write one line of a poem about {place} in {season}."
        response = f"In {season} the streets of {place} are quiet and bright."
    else:
        task = pick(rng, TASKS)
        instruction = f"How do I {task}?"
        response = f"To {task}, gather your tools first, then work slowly and check each part as you go."
    return {"instruction": instruction, "context": context, "response": response, "category": category}


# --------------------------------------------------------------------------- SST-2


def sst2_passage(rng: random.Random, polarity: int) -> str:
    """A paragraph of a review: two to five cues of one side, fewer of the other, and plot sentences among them."""
    title = film_title(rng)
    main = [sentiment_cue(rng, polarity) for _ in range(rng.randint(2, 5))]
    other = [sentiment_cue(rng, -polarity) for _ in range(rng.randint(0, len(main) - 1))]
    sentences = main + other + distinct(rng, lambda r: neutral_sentence(r, title), rng.randint(1, 8))
    rng.shuffle(sentences)
    return " ".join(sentences)


def sst2_sentence(rng: random.Random, label: int) -> str:
    """A short text of a film review whose sentiment is ``label`` (1 positive, 0 negative), as SST-2's are:
    one cue, two cues, a cue beside a plot sentence, a contrast that ends on the label's side, a verdict, or a
    few sentences whose cues mostly take the label's side."""
    polarity = 1 if label == 1 else -1
    kind = rng.randrange(6)
    if kind == 5:
        return sst2_passage(rng, polarity)
    if kind == 0:
        return sentiment_cue(rng, polarity)
    if kind == 1:
        return f"{sentiment_cue(rng, polarity)} {sentiment_cue(rng, polarity)}"
    if kind == 2:
        parts = [sentiment_cue(rng, polarity), neutral_sentence(rng, film_title(rng))]
        rng.shuffle(parts)
        return " ".join(parts)
    if kind == 3:
        other, main = sentiment_cue(rng, -polarity), sentiment_cue(rng, polarity)
        opener = pick(rng, ["Sure", "Admittedly", "Granted", "True"])
        return f"{opener}, {other[0].lower() + other[1:-1]}, but {main[0].lower() + main[1:]}"
    return verdict(rng, polarity)


def sst2_split(rng: random.Random, n: int) -> list[dict]:
    labels = [i % 2 for i in range(n)]  # exactly balanced
    rng.shuffle(labels)
    return [{"idx": i, "sentence": sst2_sentence(rng, label), "label": label} for i, label in enumerate(labels)]


# --------------------------------------------------------------------------- LAMBADA (OpenAI's version)


# A passage whose last word the reader can only guess from the passage: a name, a place or a thing it
# mentioned sentences before. As in LAMBADA, the text has no final full stop; the target is its last word.
def lambada_passage(rng: random.Random) -> dict:
    first, other = distinct(rng, lambda r: pick(r, FIRST_NAMES), 2)
    place = pick(rng, PLACES)
    dish, gadget, season = pick(rng, DISHES), pick(rng, GADGETS), pick(rng, SEASONS)
    kind = rng.randrange(4)
    if kind == 0:
        text = (
            f"{first} had not been back to {place} since the {season} the factory closed. The streets looked smaller "
            f"now, and the bakery on the corner had become a phone shop. {other} met the train and carried the bags "
            f"without a word. Later, over tea, {other} asked what had made the trip worth it after all these years. "
            f"{first} thought for a while and said that nothing was quite like {place}"
        )
    elif kind == 1:
        text = (
            f"Every {season} {first} cooked the same {dish.split()[-1]} for the whole street. The recipe came from "
            f"a grandmother nobody else remembered, and it was written on a card kept in the drawer. When {other} "
            f"moved in next door, the first knock on the door came with a warm plate of "
            f"{dish.split()[-1]}"
        )
    elif kind == 2:
        item = gadget.split()[-1]
        text = (
            f"The {gadget} arrived on a Tuesday, two weeks late, in a box far too large for it. {first} read the "
            f"manual twice and still could not find the switch. {other} laughed, pressed the only button on the back, "
            f"and the room filled with light from the little {item}"
        )
    else:
        text = (
            f"Nobody in the village expected {first} to win the race. {other} had trained all {season}, and the "
            f"bookmakers in {place} had stopped taking bets. But on the last hill {other} slowed, a cramp in one leg, "
            f"and the crowd watched in silence as the lead passed to {first}"
        )
    return {"text": text}


# --------------------------------------------------------------------------- driver


def split_rng(seed: int, dataset: str, split: str) -> random.Random:
    """The generator of one data set's split. Each split draws from its own, seeded by its name, so a
    change to one set (its size, its templates) leaves every other file, and its cache fingerprint, as it was."""
    return random.Random(f"{seed}/{dataset}/{split}")  # a str seed is hashed with SHA-512: the same on every run


def build_all(seed: int = SEED, sizes: dict | None = None) -> dict[str, str]:
    """Return {relative path: file contents} for every sample file."""
    sizes = sizes or SIZES
    files: dict[str, list[dict]] = {}
    for split, n in sizes["imdb"].items():
        files[f"imdb/{split}.jsonl"] = imdb_split(split_rng(seed, "imdb", split), n, labelled=split != "unsupervised")
    for split, n in sizes["cnn_dailymail"].items():
        rng = split_rng(seed, "cnn_dailymail", split)
        files[f"cnn_dailymail/{split}.jsonl"] = [cnn_story(rng, split, i) for i in range(n)]
    for split, n in sizes["c4"].items():
        rng = split_rng(seed, "c4", split)
        files[f"c4/{split}.jsonl"] = [c4_doc(rng) for _ in range(n)]
    for split, n in sizes["dolly"].items():
        rng = split_rng(seed, "dolly", split)
        files[f"dolly/{split}.jsonl"] = [dolly_row(rng) for _ in range(n)]
    for split, n in sizes["lambada"].items():
        rng = split_rng(seed, "lambada", split)
        files[f"lambada/{split}.jsonl"] = [lambada_passage(rng) for _ in range(n)]
    for split, n in sizes["sst2"].items():
        files[f"sst2/{split}.jsonl"] = sst2_split(split_rng(seed, "sst2", split), n)
    return {path: "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows) for path, rows in files.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="compare a fresh run with the files on disk instead of writing"
    )
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="folder to write into")
    args = parser.parse_args(argv)
    stale = []
    for rel, text in build_all().items():
        path = args.out / rel
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path} ({text.count(chr(10))} rows)")
    if stale:
        print("out of date: " + ", ".join(stale) + " (run: python data/generate.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
