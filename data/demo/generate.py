"""Write Faultline's DEMO logs (made-up models, made-up answers) into this folder.

    python data/demo/generate.py          # rewrites data/demo/helm and data/demo/jsonl

The files are committed; this script is how they were made, and re-running it reproduces them
byte for byte (fixed seed, no timestamps). Four invented models (`demo/...`) answer four small
invented datasets in two formats:

- `helm/runs/demo/`: a HELM suite (run_spec.json, scenario.json, instances.json,
  display_predictions.json, per_instance_stats.json, stats.json per run): `demo_math`, worked
  math word problems, and `demo_qa`, short-answer questions, each in three subjects.
- `jsonl/`: Faultline's custom JSONL: `demo_summaries` (summarise a passage against a reference
  summary) and `demo_instructions` (instructions with explicit constraints).

Every failed answer fails in a way written into its text — a false step ("7 × 12 = 86"), a wrong
method, a missing step, a refusal, a broken format, a violated length limit, invented details,
a loop, a wrong language — and each model fails in its own mix, so signatures differ and a
comparison has something to find. None of it is a real model's output.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 8
MODELS = ["demo/atlas-70b", "demo/atlas-7b", "demo/borealis-13b", "demo/cirrus-8b"]

# failures per model and dataset, by kind; every other question is answered correctly
PROFILES = {
    "demo_math": {
        "demo/atlas-70b": {"calc": 0, "method": 2, "incomplete": 1, "loop": 1},
        "demo/atlas-7b": {"calc": 14, "method": 3, "incomplete": 2, "loop": 1},
        "demo/borealis-13b": {"calc": 2, "method": 3, "incomplete": 2, "refusal": 4, "loop": 2},
        "demo/cirrus-8b": {"calc": 5, "method": 5, "incomplete": 2, "loop": 1},
    },
    "demo_qa": {
        "demo/atlas-70b": {"factual": 3, "invented": 2},
        "demo/atlas-7b": {"factual": 4, "invented": 4, "refusal": 1},
        "demo/borealis-13b": {"factual": 2, "invented": 1, "refusal": 6, "loop": 2},
        "demo/cirrus-8b": {"factual": 3, "invented": 2, "language": 4},
    },
    "demo_summaries": {
        "demo/atlas-70b": {"overlong": 5, "invented": 1},
        "demo/atlas-7b": {"overlong": 2, "invented": 3, "incomplete": 2},
        "demo/borealis-13b": {"overlong": 5, "loop": 2, "refusal": 1},
        "demo/cirrus-8b": {"language": 3, "incomplete": 2, "overlong": 1},
    },
    "demo_instructions": {
        "demo/atlas-70b": {"length": 3, "json": 3, "count": 1},
        "demo/atlas-7b": {"length": 3, "json": 2, "code": 2, "count": 2},
        "demo/borealis-13b": {"length": 4, "refusal": 3, "count": 1},
        "demo/cirrus-8b": {"json": 4, "code": 3, "length": 2},
    },
}

REFUSALS = [
    "I'm sorry, but I can't help with that request.",
    "I'm unable to answer this. As an AI, I cannot be sure my answer would be accurate.",
    "I cannot provide an answer to this question.",
]

# ---------------------------------------------------------------- math word problems


def _math_problem(subject: str, rng: random.Random) -> dict:
    """A problem, its worked solution as steps (a, op, b, result, unit phrase) and the answer."""
    if subject == "arithmetic":
        a, b = rng.randint(4, 12), rng.randint(6, 24)
        c = rng.randint(5, a * b - 5)
        item = rng.choice(["rolls", "cookies", "muffins", "bagels"])
        q = (f"A baker bakes {a} trays of {b} {item} each and sells {c} {item}. "
             f"How many {item} are left?")
        steps = [(a, "×", b, a * b, f"{item} baked"), (a * b, "−", c, a * b - c, f"{item} left")]
        wrong = [(a, "+", b, a + b, f"{item} baked")]
        if c < a + b:
            wrong.append((a + b, "−", c, a + b - c, f"{item} left"))
    elif subject == "percentages":
        price = rng.choice([40, 60, 80, 120, 150, 200, 240])
        pct = rng.choice([10, 20, 25, 30, 40, 50])
        off = price * pct // 100
        q = (f"A jacket costs ${price}. It is on sale for {pct}% off. "
             "What is the sale price in dollars?")
        steps = [(price, "×", pct / 100, off, "dollars off"), (price, "−", off, price - off, "dollars")]
        wrong = [(price, "−", pct, price - pct, "dollars")]
    else:  # rates
        s1, h1 = rng.choice([40, 50, 60, 70, 80]), rng.randint(2, 4)
        s2, h2 = rng.choice([45, 55, 65, 90, 100]), rng.randint(1, 3)
        q = (f"A train travels at {s1} km/h for {h1} hours, then at {s2} km/h for {h2} hours. "
             "How many kilometres does it travel in total?")
        d1, d2 = s1 * h1, s2 * h2
        steps = [(s1, "×", h1, d1, "km"), (s2, "×", h2, d2, "km"), (d1, "+", d2, d1 + d2, "km in total")]
        wrong = [(s1, "+", s2, s1 + s2, "km/h"), (s1 + s2, "×", h1 + h2, (s1 + s2) * (h1 + h2), "km in total")]
    return {"question": q, "steps": steps, "wrong": wrong, "answer": steps[-1][3]}


_OPS = {"×": lambda x, y: round(x * y), "−": lambda x, y: x - y, "+": lambda x, y: x + y}


def _step(a, op, b, result, unit) -> str:
    return f"{a} {op} {b} = {result} {unit}."


def _math_answer(p: dict, kind: str, rng: random.Random) -> str:
    steps = p["steps"]
    if kind == "ok":
        lines = [f"Step {i}: {_step(*s)}" for i, s in enumerate(steps, 1)]
        return "\n".join(lines + [f"The answer is {p['answer']}."])
    if kind == "calc":
        # one step slips by a little (a false claim the text shows); later steps use the wrong
        # value correctly, so the slip carries into the final answer
        i = rng.randrange(len(steps))
        slip = rng.choice([-2, -1, 1, 2, 10])
        out, values = [], {}
        for j, (a, op, b, r, unit) in enumerate(steps):
            a, b = values.get(a, a), values.get(b, b)
            r2 = _OPS[op](a, b) + (slip if j == i else 0)
            values[r] = r2
            out.append(f"Step {j + 1}: {_step(a, op, b, r2, unit)}")
        return "\n".join(out + [f"The answer is {r2}."])
    if kind == "method":
        lines = [f"Step {i}: {_step(*s)}" for i, s in enumerate(p["wrong"], 1)]
        return "\n".join(lines + [f"The answer is {p['wrong'][-1][3]}."])
    if kind == "incomplete":
        return f"Step 1: {_step(*steps[0])}\nSo the first part is done."
    if kind == "loop":
        return f"Step 1: {_step(*steps[0])}\n" + "Let me check that again. " * 6
    if kind == "refusal":
        return rng.choice(REFUSALS)
    raise ValueError(kind)


# ---------------------------------------------------------------- short-answer QA

QA = {
    "geography": [
        ("What is the capital of Australia?", "Canberra", "Sydney", "Sydney, chosen in 1927 by a national referendum led by Prime Minister John Curtin"),
        ("What is the longest river in South America?", "Amazon", "Paraná", "the Orinoco, measured at 7,412 km by a 1998 Brazilian survey"),
        ("Which country has the city of Marrakesh?", "Morocco", "Algeria", "Tunisia, where it has been the capital since 1856"),
        ("What is the highest mountain in Africa?", "Kilimanjaro", "Mount Kenya", "Mount Stanley, first climbed in 1911 by the Duke of Abruzzi's second expedition"),
        ("Which ocean lies between Africa and Australia?", "Indian Ocean", "Pacific Ocean", "the Southern Pacific, named by the explorer Abel Tasman in 1644"),
        ("What is the capital of Canada?", "Ottawa", "Toronto", "Toronto, the capital since the Confederation Act of 1871"),
        ("Which desert covers most of northern Africa?", "Sahara", "Kalahari", "the Gobi, which the 1921 Lyon Geographic Society mapped as Africa's largest"),
        ("What is the largest lake in Africa?", "Lake Victoria", "Lake Tanganyika", "Lake Malawi, whose area was fixed at 91,200 km² by the 1964 Blantyre treaty"),
        ("In which country is the city of Porto?", "Portugal", "Spain", "Spain, where it was the royal seat of King Alfonso IX"),
        ("What is the capital of New Zealand?", "Wellington", "Auckland", "Auckland, chosen in 1901 by a vote of the Hawke's Bay council"),
        ("Which mountain range separates Europe from Asia in Russia?", "Ural Mountains", "Caucasus", "the Altai range, as agreed at the 1893 Geneva conference"),
        ("What is the capital of Kenya?", "Nairobi", "Mombasa", "Mombasa, the capital since Kenya's 1958 independence"),
    ],
    "science": [
        ("What gas do plants absorb from the air for photosynthesis?", "carbon dioxide", "oxygen", "nitrogen, as shown by Dr. Helena Marsh's 1962 Cambridge experiments"),
        ("What is the chemical symbol for sodium?", "Na", "So", "Sd, adopted by the 1911 Vienna Chemical Congress"),
        ("How many bones are in the adult human body?", "206", "212", "214, a figure set by the 1936 Royal Anatomical Census"),
        ("What planet is known as the Red Planet?", "Mars", "Jupiter", "Venus, so named by the astronomer Carl Weiss in 1781"),
        ("What is the hardest natural mineral?", "diamond", "quartz", "corundite, rated 11 on the 1952 extended Mohs scale"),
        ("What particle has a negative electric charge?", "electron", "proton", "the neutrino, identified by Lise Hartmann in 1919"),
        ("What is the boiling point of water at sea level in Celsius?", "100", "90", "96, as recalibrated by the International Thermal Board in 1990"),
        ("Which organ pumps blood through the body?", "heart", "liver", "the spleen, according to the 1974 Harvard circulation study"),
        ("What is the most abundant gas in Earth's atmosphere?", "nitrogen", "oxygen", "argon, at 61% according to NASA's 1988 AtmoScan mission"),
        ("What force keeps the planets in orbit around the Sun?", "gravity", "magnetism", "solar magnetism, per Edwin Hale's 1908 orbital law"),
        ("What is the chemical formula of water?", "H2O", "HO2", "H3O, confirmed by the 1923 Berlin spectroscopy survey"),
        ("What is the closest star to Earth?", "the Sun", "Proxima Centauri", "Sirius B, 0.4 light years away according to the 1977 Voyager survey"),
    ],
    "history": [
        ("In which year did the Berlin Wall fall?", "1989", "1991", "1987, after the Treaty of Potsdam signed by Chancellor Hans Vogel"),
        ("Who was the first person to walk on the Moon?", "Neil Armstrong", "Buzz Aldrin", "Yuri Gagarin, on the Soviet Luna 11 mission of 1966"),
        ("Which empire built Machu Picchu?", "Inca", "Aztec", "the Maya, under King Pachacal in 1320"),
        ("In which year did World War I begin?", "1914", "1918", "1912, with the Balkan declaration signed at Sarajevo"),
        ("Who wrote the Declaration of Independence?", "Thomas Jefferson", "George Washington", "Benjamin Franklin, who drafted it alone in Boston in 1774"),
        ("Which ship sank on its maiden voyage in 1912?", "Titanic", "Lusitania", "the Britannic, which sank off Nova Scotia with 2,900 passengers"),
        ("Who was the first emperor of Rome?", "Augustus", "Julius Caesar", "Marcus Aurelius, crowned in 44 BC by the Senate of Ravenna"),
        ("In which city was the Magna Carta sealed?", "Runnymede", "London", "York, in the cathedral chapter house in 1225"),
        ("Which country gifted the Statue of Liberty to the United States?", "France", "England", "Belgium, as part of the 1880 Antwerp friendship treaty"),
        ("In which year did the French Revolution begin?", "1789", "1799", "1776, with the storming of the Tuileries led by General Morel"),
        ("Who painted the Mona Lisa?", "Leonardo da Vinci", "Michelangelo", "Raphael, who finished it in Florence in 1498 for the Medici bank"),
        ("Which civilisation built the pyramids of Giza?", "Ancient Egyptians", "Babylonians", "the Nubians, under Pharaoh Kamose II around 1800 BC"),
    ],
}

QA_INSTRUCTIONS = ("Answer the following question with a short factual answer in English. Give the "
                   "name, date or number that is asked for, and nothing else.\n\nQuestion: ")

FRENCH = ("La réponse est {wrong}, car c'est la ville et le lieu que la plupart des gens "
          "connaissent le mieux dans la région, et elle est aussi très importante pour le pays.")


def _qa_answer(fact: tuple, kind: str, rng: random.Random) -> str:
    question, right, wrong, invented = fact
    if kind == "ok":
        return f"{right}."
    if kind == "factual":
        return f"The answer is {wrong}."
    if kind == "invented":
        return f"The answer is {invented}."
    if kind == "language":
        return FRENCH.format(wrong=wrong)
    if kind == "refusal":
        return rng.choice(REFUSALS)
    if kind == "loop":
        return f"The answer is {wrong}. " + "I think the answer is correct. " * 5
    raise ValueError(kind)


# ---------------------------------------------------------------- summarisation

PASSAGES = [
    ("news", "The city council of Harrow Bay voted on Tuesday to close the old harbour bridge to cars from March. The bridge, built in 1931, has cracks in two of its supports. Cyclists and pedestrians may still cross it. A new road bridge further north is planned but has no budget yet, and shop owners near the harbour fear they will lose customers.",
     "Harrow Bay will close its cracked 1931 harbour bridge to cars from March; walkers and cyclists can still use it, and local shops worry about lost trade."),
    ("news", "A heatwave pushed temperatures in the valley town of Ostmere above 38 degrees for five days in a row. The town opened its library and two schools as cool rooms. Hospitals reported more patients with heat exhaustion, mostly older people. Forecasters expect cooler weather from Sunday.",
     "A five-day heatwave above 38 degrees in Ostmere led the town to open cool rooms and sent more older people to hospital; cooler weather is expected from Sunday."),
    ("news", "The regional rail operator will add a late train between Kelby and Norwick on Fridays and Saturdays. The train leaves Kelby at 23:40. The change follows a petition signed by 3,000 residents who said the last train left too early. The trial runs for six months.",
     "After a 3,000-signature petition, a late Friday and Saturday train from Kelby to Norwick at 23:40 will run on a six-month trial."),
    ("news", "Volunteers planted 1,200 trees along the banks of the river Lune over the weekend. The project aims to shade the water and keep it cool for salmon. The local angling club paid for the saplings. Organisers plan a second planting day in the autumn.",
     "Volunteers planted 1,200 trees along the river Lune to keep the water cool for salmon, funded by the angling club, with more planting planned for autumn."),
    ("news", "The museum in Calder reopened after a two-year renovation that added a new roof and a lift. Entry stays free. The first exhibition shows tools and photographs from the town's mining past. The museum expects 40,000 visitors in its first year.",
     "Calder's museum reopened after two years of work on its roof and a new lift, with free entry and a first exhibition on the town's mining history."),
    ("news", "Farmers in the Denholm district say this year's wheat harvest is a third smaller than last year because of a wet spring. Prices at the local market have risen. The farmers' union has asked the government for help with the cost of drying grain.",
     "A wet spring cut Denholm's wheat harvest by a third, raising local prices, and the farmers' union is asking the government to help pay for drying grain."),
    ("news", "The public swimming pool in Ferrington will close for repairs in June after inspectors found a leak under the main pool. Swimming lessons will move to the school pool. The council says the repairs should take about ten weeks.",
     "Ferrington's pool closes in June for about ten weeks to repair a leak found by inspectors, and swimming lessons move to the school pool."),
    ("news", "A fire at a recycling plant outside Brennock sent thick smoke over the town on Monday night. No one was hurt. Residents were told to keep their windows closed. Fire crews had the fire under control by morning and are looking into its cause.",
     "A recycling plant fire near Brennock spread smoke over the town on Monday night without injuries; it was under control by morning and its cause is being investigated."),
    ("news", "The library in Westfold will open on Sundays from next month. A local charity will pay for the extra staff for one year. The library says weekend visits have doubled since it added a children's reading corner.",
     "Westfold library will open on Sundays from next month, paid for by a charity for a year, after weekend visits doubled."),
    ("news", "Bus fares in the county will rise by ten pence in April, the first rise in four years. The bus company says fuel and wages cost more. Passengers under eighteen and over sixty-five will still travel free.",
     "County bus fares rise by ten pence in April, the first rise in four years, blamed on fuel and wages; under-18s and over-65s still travel free."),
    ("science", "Researchers tracked 200 garden snails with small reflective dots and found that most returned to the same resting place each night, even after being moved up to ten metres away. Snails moved further away were less likely to come back. The team thinks the snails follow their own slime trails.",
     "A study of 200 marked snails found most returned to their usual resting spot after being moved up to ten metres, probably by following slime trails."),
    ("science", "A study of 1,500 office workers found that those who took a ten-minute walk after lunch reported feeling less tired in the afternoon than those who stayed at their desks. The effect was small, and the researchers say a longer study is needed.",
     "In a study of 1,500 office workers, a ten-minute walk after lunch was linked to slightly less afternoon tiredness, though researchers want a longer study."),
    ("science", "Astronomers measured the brightness of a distant star for three years and found it dims by one percent every 41 days. They think a large planet passes in front of it. The planet would be about twice the size of Jupiter.",
     "A star that dims by one percent every 41 days may have a planet about twice Jupiter's size passing in front of it, astronomers say after three years of measurements."),
    ("science", "Engineers tested a new road surface made partly from recycled plastic on a 500-metre stretch of road. After two winters it showed fewer cracks than the normal surface next to it. The material costs about ten percent more.",
     "A road surface partly made from recycled plastic cracked less than normal asphalt over two winters on a 500-metre test stretch, but costs about ten percent more."),
    ("science", "Biologists counted bees in 60 city gardens and found twice as many species in gardens with wild flowers as in gardens with only lawns. Gardens with a mix of flowers blooming at different times had the most bees.",
     "Counting bees in 60 city gardens, biologists found twice as many species where wild flowers grew than on lawns alone, most where flowers bloomed at different times."),
    ("science", "A team grew tomatoes under red and blue LED lights and compared them with tomatoes grown in sunlight. The LED tomatoes grew faster but tasted less sweet in a blind test with 80 people.",
     "Tomatoes grown under red and blue LEDs grew faster than sunlit ones but tasted less sweet to 80 people in a blind test."),
    ("science", "Scientists drilled an ice core 800 metres deep in Greenland. Air bubbles trapped in the ice show carbon dioxide levels over the last 20,000 years. The newest layers show the fastest rise in the whole record.",
     "An 800-metre Greenland ice core records 20,000 years of carbon dioxide, with the fastest rise in its newest layers."),
    ("science", "Doctors compared two ways of treating sprained ankles in 300 patients: rest with a brace, or early gentle exercise. After six weeks, the exercise group walked without pain sooner. Both groups had recovered equally after three months.",
     "In 300 patients with sprained ankles, early gentle exercise led to pain-free walking sooner than resting in a brace, though both groups were equal after three months."),
    ("science", "A survey of 50 lakes found that lakes with more shoreline trees had cooler water in summer and more fish species. Lakes next to farmland had more algae.",
     "A survey of 50 lakes linked shoreline trees with cooler summer water and more fish species, while lakes beside farmland had more algae."),
    ("science", "Researchers taught crows to drop stones into a tube of water to raise a floating treat. Crows that watched another crow do it first learned the trick in half the time.",
     "Crows learned to drop stones into water to raise a floating treat, and those that first watched another crow learned twice as fast."),
]

SPANISH = ("El texto habla de un cambio importante en la ciudad y de las personas que viven allí, "
           "y explica que la situación es difícil para los vecinos y para el gobierno local.")

FILLER = ("It is worth noting that this is an important development for everyone involved, and "
          "it is something that many people will certainly be interested in reading about, "
          "because it has consequences that could matter in the future in many different ways. ")


def _summary_answer(passage: str, reference: str, kind: str, rng: random.Random) -> str:
    first, *rest = passage.split(". ")
    if kind == "ok":
        return reference
    if kind == "overlong":
        return ("Here is a detailed summary of the passage. " + passage + " " + FILLER * 4
                + "In conclusion, " + reference[0].lower() + reference[1:])
    if kind == "invented":
        return (reference[:-1] + ", according to a statement by spokesperson Maria Delgado, who "
                "said the decision will cost 4.2 million pounds.")
    if kind == "incomplete":
        return first + "."
    if kind == "language":
        return SPANISH
    if kind == "loop":
        return first + ". " + "The passage is about this. " * 6
    if kind == "refusal":
        return rng.choice(REFUSALS)
    raise ValueError(kind)


# ---------------------------------------------------------------- instruction following

TOPICS = ["the ocean", "a rainy city", "autumn leaves", "a lighthouse", "the desert at night",
          "a mountain lake", "an old train station", "a beehive", "a winter market", "a library"]
LANDMARKS = [("Eiffel Tower", 1889), ("Golden Gate Bridge", 1937), ("Sydney Opera House", 1973),
             ("Empire State Building", 1931), ("Brooklyn Bridge", 1883), ("Space Needle", 1962),
             ("Tower Bridge", 1894), ("Atomium", 1958), ("CN Tower", 1976), ("Burj Khalifa", 2010)]
FUNCS = [("is_even", "n", "True when the integer n is even", "return n % 2 == 0"),
         ("square", "x", "the square of x", "return x * x"),
         ("first_char", "s", "the first character of the string s", "return s[0]"),
         ("total", "items", "the sum of a list of numbers", "return sum(items)"),
         ("shout", "s", "the string s in upper case", "return s.upper()")]
LISTS = [("fruits", ["apple", "pear", "plum", "cherry"]), ("colours", ["red", "blue", "green", "amber"]),
         ("planets", ["Mars", "Venus", "Saturn", "Neptune"]), ("trees", ["oak", "birch", "pine", "ash"]),
         ("rivers", ["Nile", "Danube", "Mekong", "Volga"])]


def _instructions(rng: random.Random) -> list[dict]:
    """30 tasks: length limits, JSON and code formats, item counts; each knows its answers."""
    tasks = []
    for topic in TOPICS:
        tasks.append({"domain": "length", "input": f"Describe {topic} in under 30 words.",
                      "reference": f"A short description of {topic} in fewer than 30 words.",
                      "ok": f"Quiet and wide, {topic} holds its own light; every sound fades into it.",
                      "length": (f"{topic[0].upper() + topic[1:]} is a place full of atmosphere. " + FILLER * 2).strip()})
    for name, year in LANDMARKS:
        tasks.append({"domain": "format", "input": f'Return only a JSON object with the keys "name" and "year" (the year {name} was completed).',
                      "reference": json.dumps({"name": name, "year": year}),
                      "ok": json.dumps({"name": name, "year": year}),
                      "json": '{"name": "%s", "year": %d,}' % (name, year),
                      "code_fail": None})
    for fname, arg, what, body in FUNCS:
        tasks.append({"domain": "format", "input": f"Write a Python function `{fname}({arg})` that returns {what}. Reply with the code only, in a ```python block.",
                      "reference": f"def {fname}({arg}):\n    {body}",
                      "ok": f"```python\ndef {fname}({arg}):\n    {body}\n```",
                      "code": f"```python\ndef {fname}({arg})\n    {body}\n```"})
    for kind, items in LISTS:
        tasks.append({"domain": "count", "input": f"List exactly three {kind} as a bulleted list, one per line, nothing else.",
                      "reference": "\n".join(f"- {x}" for x in items[:3]),
                      "ok": "\n".join(f"- {x}" for x in items[:3]),
                      "count": "\n".join(f"- {x}" for x in items)})
    return tasks


def _instruction_answer(task: dict, kind: str, rng: random.Random) -> str:
    if kind == "refusal":
        return rng.choice(REFUSALS)
    return task[kind]


def _kinds_for(task: dict) -> set[str]:
    return {k for k in ("length", "json", "code", "count") if task.get(k)} | {"refusal"}


# ---------------------------------------------------------------- assignment and writers


def _assign(n: int, profile: dict[str, int], rng: random.Random, allowed=None) -> list[str]:
    """Which question gets which failure kind (the rest "ok"), shuffled with the seed."""
    kinds = ["ok"] * n
    order = list(range(n))
    rng.shuffle(order)
    for kind, count in profile.items():
        for _ in range(count):
            i = next(j for j in order if kinds[j] == "ok" and (allowed is None or kind in allowed(j)))
            kinds[i] = kind
    return kinds


def _dump(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _stat(name: str, value: float, split: str = "test") -> dict:
    return {"name": {"name": name, "split": split}, "count": 1, "sum": value,
            "sum_squared": value * value, "min": value, "max": value, "mean": value,
            "variance": 0.0, "stddev": 0.0}


def _helm_run(suite: Path, dataset: str, description: str, subject: str, model: str,
              items: list[dict]) -> None:
    name = f"{dataset}:subject={subject},model={model.replace('/', '_')}"
    run = suite / name
    _dump(run / "run_spec.json", {
        "name": name,
        "scenario_spec": {"class_name": f"demo.{dataset}", "args": {"subject": subject}},
        "adapter_spec": {"method": "generation", "model": model, "model_deployment": model,
                         "temperature": 0.0, "max_tokens": 400},
        "metric_specs": [{"class_name": "helm.benchmark.metrics.basic_metrics.BasicGenerationMetric",
                          "args": {"names": ["exact_match"]}}],
        "groups": [dataset],
    })
    _dump(run / "scenario.json", {"name": dataset, "description": f"DEMO: {description}",
                                  "tags": ["demo"]})
    _dump(run / "instances.json", [
        {"input": {"text": it["input"]}, "references": [{"output": {"text": it["reference"]}, "tags": ["correct"]}],
         "split": "test", "id": it["id"]} for it in items])
    _dump(run / "display_predictions.json", [
        {"instance_id": it["id"], "train_trial_index": 0, "predicted_text": it["output"],
         "stats": {"exact_match": float(it["correct"])}} for it in items])
    _dump(run / "per_instance_stats.json", [
        {"instance_id": it["id"], "train_trial_index": 0, "stats": [_stat("exact_match", float(it["correct"]))]}
        for it in items])
    _dump(run / "stats.json", [_stat("exact_match", sum(it["correct"] for it in items) / len(items))])


def generate(out: Path = HERE) -> dict[str, int]:
    """Write every demo file under `out`; returns predictions per dataset."""
    rng = random.Random(SEED)
    suite = out / "helm" / "runs" / "demo"
    counts = {}

    problems = {s: [_math_problem(s, rng) for _ in range(12)] for s in ("arithmetic", "percentages", "rates")}
    for model in MODELS:
        flat = [(s, i, p) for s, ps in problems.items() for i, p in enumerate(ps)]
        kinds = _assign(len(flat), PROFILES["demo_math"][model], rng)
        for subject in problems:
            items = []
            for (s, i, p), kind in zip(flat, kinds):
                if s != subject:
                    continue
                items.append({"id": f"id{i + 1}", "input": p["question"] + "\nShow your working, then end with 'The answer is N.'",
                              "reference": str(p["answer"]), "output": _math_answer(p, kind, rng),
                              "correct": kind == "ok"})
            _helm_run(suite, "demo_math", "math word problems with worked solutions", subject, model, items)
    counts["demo_math"] = 36 * len(MODELS)

    for model in MODELS:
        flat = [(s, i, f) for s, fs in QA.items() for i, f in enumerate(fs)]
        kinds = _assign(len(flat), PROFILES["demo_qa"][model], rng)
        for subject in QA:
            items = [{"id": f"id{i + 1}", "input": QA_INSTRUCTIONS + f[0], "reference": f[1],
                      "output": _qa_answer(f, kind, rng), "correct": kind == "ok"}
                     for (s, i, f), kind in zip(flat, kinds) if s == subject]
            _helm_run(suite, "demo_qa", "short-answer questions", subject, model, items)
    counts["demo_qa"] = 36 * len(MODELS)

    rows = []
    for model in MODELS:
        kinds = _assign(len(PASSAGES), PROFILES["demo_summaries"][model], rng)
        for i, ((domain, passage, ref), kind) in enumerate(zip(PASSAGES, kinds)):
            rows.append({"model": model, "dataset": "demo_summaries", "domain": domain,
                         "instance_id": f"sum-{i + 1:02d}",
                         "input": "Summarise the passage in one sentence of at most 35 words.\n\n" + passage,
                         "output": _summary_answer(passage, ref, kind, rng), "reference": ref,
                         "correct": kind == "ok"})
    _write_jsonl(out / "jsonl" / "demo_summaries.jsonl", rows)
    counts["demo_summaries"] = len(rows)

    tasks = _instructions(rng)
    rows = []
    for model in MODELS:
        kinds = _assign(len(tasks), PROFILES["demo_instructions"][model], rng,
                        allowed=lambda j: _kinds_for(tasks[j]))
        for i, (task, kind) in enumerate(zip(tasks, kinds)):
            rows.append({"model": model, "dataset": "demo_instructions", "domain": task["domain"],
                         "instance_id": f"ins-{i + 1:02d}", "input": task["input"],
                         "output": _instruction_answer(task, "ok" if kind == "ok" else kind, rng),
                         "reference": task["reference"], "correct": kind == "ok"})
    _write_jsonl(out / "jsonl" / "demo_instructions.jsonl", rows)
    counts["demo_instructions"] = len(rows)
    return counts


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    written = generate()
    print("wrote DEMO logs to", HERE, "—", ", ".join(f"{k}: {v} predictions" for k, v in written.items()))
