"""CostBench-style user queries for the planning suite: generate, load and dump them.

Generated queries (:func:`generate_queries`) draw one preference combination per query from
the task's 4 x 4 test-split values (:data:`~pytest_budget.planning.tools.PREFERENCE_VALUES`)
and phrase it in deliberately vague English (CostBench §3.3: "realistic vagueness while
preserving clear distinctions ... within each dimension"), several phrasings per value, never
naming an enum value verbatim.  The agent learns the allowed values from the tool list (the
``Decide_X_Preference`` spec lists every dimension's values as a JSON-schema ``enum``) or
from :func:`allowed_values` / :func:`allowed_values_text`.

Determinism: every choice is a sha256 digest of ``seed``, task, query index and a slot name
(never Python's salted ``hash``), so the same arguments give the same queries in any
process, and a longer list extends a shorter one (``generate_queries(t, 10)[:5] ==
generate_queries(t, 5)``).  Preference combinations are a seeded permutation of all 256, so
the first 256 queries of a task have pairwise different preferences.

Query ids follow CostBench's ``<Query00001>`` form and are unique across tasks: task number
``t`` (its index in :data:`~pytest_budget.planning.tools.TASKS`, location = 0) owns the block
``t * 10000 + 1 .. t * 10000 + 9999``, so query ``i`` (from 0) of a task is
``<Query{t * 10000 + i + 1:05d}>`` (location ``<Query00001>``..., transportation
``<Query10001>``..., shopping ``<Query50001>``...).  Ids are positions, not content: the
same id under another ``seed`` is another query (and, since costs derive from the id, it
gets the same tool costs).

Files (:func:`load_queries`, :func:`dump_queries`) use CostBench's field layout, one object
per query::

    {"query_id": "<Query00001>", "task": "location",
     "preferences": {"category": ..., "tier": ..., "style": ..., "feature_package": ...},
     "TimeInfo": "2025-07-14 to 2025-07-18", "location_preference": null,
     "query": {"input": "<the user's request>"}}

either as one JSON list or as JSON Lines.  Other fields are ignored on load.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import itertools
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from pytest_budget.planning.records import Query
from pytest_budget.planning.tools import DIMENSIONS, PREFERENCE_VALUES, TASKS, dimension_type

__all__ = [
    "QUERY_ID_BLOCK",
    "QueryFileError",
    "allowed_values",
    "allowed_values_text",
    "dump_queries",
    "generate_queries",
    "load_queries",
    "query_from_dict",
    "query_id",
    "query_to_dict",
]

#: Ids per task: task ``t`` owns ``t * QUERY_ID_BLOCK + 1 .. (t + 1) * QUERY_ID_BLOCK - 1``.
QUERY_ID_BLOCK = 10_000

# Several vague phrasings per (task, dimension, value); none contains any value of its task
# verbatim (tests check every text against every value of the task).
_PHRASES: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {
    "location": {
        "category": {
            "city": (
                "Somewhere urban, with tall buildings and crowded avenues.",
                "I picture a big metropolis, all concrete and lights.",
                "I'd like a place where everything is a subway ride away.",
            ),
            "beach": (
                "I want sand between my toes and the sea right there.",
                "Somewhere on the coast where I can swim in the ocean every day.",
                "Picture waves, sunshine and a towel on the shore.",
            ),
            "mountain": (
                "I'm after high peaks, thin air and alpine trails.",
                "Somewhere up in the highlands with snowy summits.",
                "I want to wake up looking at a ridge line above the clouds.",
            ),
            "countryside": (
                "Somewhere rural and quiet, with farms and fields all around.",
                "Rolling green hills and little villages, far from any crowds.",
                "I'd like to be out among meadows, orchards and vineyards.",
            ),
        },
        "tier": {
            "luxury": (
                "Money is no object; I want the most lavish experience possible.",
                "Go all out: pure indulgence from start to finish.",
                "I want the very top end, the kind of opulence people dream about.",
            ),
            "premium": (
                "I'm happy to pay for a clearly better-than-average trip, just not the very top.",
                "Polished and high quality, a step above ordinary, without going over the top.",
                "I'd spend a bit more for comfort and quality, short of splurging.",
            ),
            "mid-range": (
                "Something sensibly priced, neither cheap nor fancy.",
                "A middle-of-the-road spend suits me fine.",
                "Reasonable prices and decent quality, nothing extravagant.",
            ),
            "budget": (
                "It has to be something that won't break the bank.",
                "I'm watching every penny, so the cheaper the better.",
                "Money is tight; keep the costs as low as possible.",
            ),
        },
        "style": {
            "cultural immersion": (
                "I want to live like the locals do: their traditions, food, history and language.",
                "Diving deep into local heritage and customs matters most to me.",
                "I'd love to soak up the local way of life, its festivals and old traditions.",
            ),
            "relaxation": (
                "Mostly I want to unwind and do as little as possible.",
                "The point is rest: slow mornings, no schedule, total calm.",
                "I need to recharge and decompress, nothing strenuous.",
            ),
            "adventure": (
                "I want an adrenaline rush: hiking, climbing, rafting, that sort of thing.",
                "Give me thrills and physical challenges outdoors.",
                "I'm keen on daring activities that get my heart pounding.",
            ),
            "nightlife": (
                "The evenings matter most: bars, clubs and dancing until late.",
                "I want a place that really comes alive after dark.",
                "Late nights out and a lively after-hours scene are a must.",
            ),
        },
        "feature_package": {
            "family friendly": (
                "I'm bringing my kids, so it has to work for young children.",
                "We're parents with little ones in tow.",
                "It needs to suit the whole household, toddlers included.",
            ),
            "romantic getaway": (
                "It's a trip for just my partner and me, something intimate.",
                "We're celebrating our anniversary as a couple.",
                "I'm picturing candlelit evenings with my significant other.",
            ),
            "solo explorer": (
                "I'll be on my own and want to wander freely.",
                "It's just me, travelling alone and discovering things at my own pace.",
                "A trip by myself, independent, with nobody else's plans to follow.",
            ),
            "group celebration": (
                "A big bunch of friends is coming along to celebrate a milestone.",
                "We're a crowd marking a birthday together.",
                "It's a festive trip for a large group of us.",
            ),
        },
    },
    "transportation": {
        "category": {
            "flight": (
                "I'd rather go by air.",
                "Flying there is what I have in mind.",
                "Get me a seat on a plane.",
            ),
            "train": (
                "I'd like to go by rail.",
                "Riding the rails appeals to me more than anything on the road.",
                "Tracks, not roads or skies: I want to go by railway.",
            ),
            "bus": (
                "A long-distance coach along the highway is fine by me.",
                "I'm happy to ride an intercity coach.",
                "Put me on a motorcoach with everyone else.",
            ),
            "car rental": (
                "I want to pick up a hired car and drive myself.",
                "I'd like my own set of wheels to get there.",
                "Driving myself in a hired vehicle suits me best.",
            ),
        },
        "tier": {
            "luxury class": (
                "Only the very best cabin will do, the most exclusive seat available.",
                "I want the top-of-the-line ticket, pure indulgence.",
                "Money's no issue: the most lavish seating there is.",
            ),
            "business class": (
                "A roomy seat of the kind companies pay for on work trips, short of the very top.",
                "Well above the regular seats: the tier corporate travellers usually get.",
                "The professional traveller's tier, refined but not the most exclusive one.",
            ),
            "standard class": (
                "Just a regular ticket, nothing special.",
                "An ordinary seat is fine.",
                "The usual normal fare suits me.",
            ),
            "budget class": (
                "The cheapest fare going, please.",
                "I'm counting pennies, so the lowest-priced ticket there is.",
                "Bare-bones is fine as long as it's inexpensive.",
            ),
        },
        "style": {
            "speed priority": (
                "Getting there fast is what matters most.",
                "I want the quickest possible journey.",
                "Every minute counts, so keep the travel time to a minimum.",
            ),
            "comfort priority": (
                "Above all I want to be comfortable on the way.",
                "A cosy, pleasant ride matters more to me than anything else.",
                "I care most about an easy journey where I can settle in.",
            ),
            "scenic route": (
                "I'd love beautiful views along the way.",
                "The journey itself should be picturesque.",
                "Take me past gorgeous landscapes as we go.",
            ),
            "schedule flexibility priority": (
                "My plans might shift, so I need to be able to change times easily.",
                "Being able to move my departure time is the key thing for me.",
                "I want something I can rebook or reschedule without fuss.",
            ),
        },
        "feature_package": {
            "onboard connectivity and power": (
                "I need to stay online and keep my laptop charged on the way.",
                "Wi-Fi and a plug at my seat are essential.",
                "I'll be working en route, so internet and outlets matter.",
            ),
            "full meal and beverage service": (
                "I want proper food and drinks served during the trip.",
                "Hot meals and drinks on board, please.",
                "Being well fed and watered along the way is important.",
            ),
            "special luggage allowance": (
                "I'm carrying a lot of gear, so I need extra room for bags.",
                "I'm bringing bulky equipment like skis, so generous bag limits matter.",
                "My suitcases are oversized and I have more of them than usual.",
            ),
            "lie flat or sleeper facility": (
                "I want to be able to stretch out fully and sleep.",
                "A proper bed, or a seat that reclines all the way, is a must.",
                "I'd like to get a real night's rest lying down on the way.",
            ),
        },
    },
    "accommodation": {
        "category": {
            "hotel": (
                "A conventional place with a front desk, room service and daily housekeeping.",
                "Somewhere with a reception desk and staff on hand around the clock.",
                "Rooms along a corridor and a concierge in the lobby, the classic setup.",
            ),
            "hostel": (
                "Dorm beds and a shared common room with other backpackers are fine.",
                "A backpacker place with bunk beds and communal lounges.",
                "I'm fine sharing a dormitory with other travellers.",
            ),
            "vacation rental": (
                "I'd rather have a whole apartment or house to ourselves.",
                "Let me book an entire private home for the stay.",
                "Somewhere with its own front door, a full flat just for us.",
            ),
            "resort": (
                "A self-contained complex with everything on site, so we never need to leave.",
                "An all-in-one property with activities and restaurants on the grounds.",
                "I want a sprawling compound with every amenity inside the gates.",
            ),
        },
        "tier": {
            "five star": (
                "The most upscale, top-rated place possible.",
                "Only the highest rating will do.",
                "The finest, most lavish standard of lodging there is.",
            ),
            "four star": (
                "Very nice and high quality, just short of the absolute top.",
                "Upmarket, but not the most extravagant.",
                "A clearly superior place, one notch below the finest.",
            ),
            "three star": (
                "Comfortable and decent, right in the middle of the market.",
                "A solid, mid-level place with the usual comforts.",
                "Nothing fancy, but clean and reliably good.",
            ),
            "economy": (
                "As cheap as possible; I just need a bed.",
                "Something inexpensive that won't break the bank.",
                "Rock-bottom prices are what I'm after.",
            ),
        },
        "style": {
            "business": (
                "I'm travelling for work, so a desk, fast internet and meeting rooms matter.",
                "It's a work trip and I need a place suited to professionals.",
                "Corporate travel: I want somewhere set up for getting work done.",
            ),
            "boutique": (
                "Somewhere small, stylish and full of character, not a chain.",
                "An intimate, design-led place with personality.",
                "I want a quirky, individually decorated little place.",
            ),
            "family": (
                "It needs to work for kids: cribs, connecting rooms, a play area.",
                "We're travelling with children, so somewhere child-oriented.",
                "Parents and little ones: a place geared to youngsters.",
            ),
            "wellness": (
                "I want to focus on health: yoga, nourishing food, restoring body and mind.",
                "Somewhere centred on self-care and coming back rejuvenated.",
                "A retreat atmosphere with fitness classes and mindfulness on offer.",
            ),
        },
        "feature_package": {
            "free breakfast included": (
                "I'd like the morning meal to be covered by the room rate.",
                "Starting the day with a complimentary morning meal matters to me.",
                "The price should include my first meal of the day.",
            ),
            "pool and spa access": (
                "I want somewhere to swim laps and then get a massage.",
                "Swimming plus saunas and treatments would be ideal.",
                "I'd love a dip in the water and a steam room afterwards.",
            ),
            "kitchen facilities": (
                "I want to cook my own meals.",
                "We need to prepare our own food, with a stove and a fridge.",
                "Self-catering matters; I like making dinner myself.",
            ),
            "airport shuttle service": (
                "I need a ride from the terminal when I land.",
                "Being picked up after my plane arrives would be a big help.",
                "Transfers to and from the airfield would save me hassle.",
            ),
        },
    },
    "attraction": {
        "category": {
            "museum": (
                "I want to see exhibits and collections in a gallery-type setting.",
                "Somewhere with artefacts behind glass and curated halls.",
                "Paintings, sculptures or old objects on display, indoors.",
            ),
            "theme park": (
                "Roller coasters and big rides are what I'm thinking of.",
                "An amusement venue with rides and costumed characters.",
                "Somewhere full of fairground attractions and parades.",
            ),
            "nature park": (
                "Trails through forests and wildlife in the open air.",
                "Somewhere green and wild, with lakes and hiking paths.",
                "A protected natural area with animals and scenery.",
            ),
            "historic site": (
                "Old ruins, castles or ancient landmarks.",
                "A place where important events of the past happened, with centuries-old walls.",
                "Somewhere heritage-listed, with real ancient stones to walk among.",
            ),
        },
        "tier": {
            "vip access": (
                "I want the most exclusive behind-the-scenes experience money can buy.",
                "Treat me like a celebrity: private areas and special privileges.",
                "The top-tier pass with exclusive perks, whatever it costs.",
            ),
            "premium ticket": (
                "A better-than-basic pass with a few extras, but not the most exclusive one.",
                "I'll pay a bit more for an upgraded admission.",
                "An enhanced pass, a notch above the ordinary one.",
            ),
            "standard ticket": (
                "Just regular admission, nothing fancy.",
                "An ordinary entrance pass is fine.",
                "The normal way in, like everyone else.",
            ),
            "free entry": (
                "Ideally it shouldn't cost anything to get in.",
                "I'd prefer somewhere with no admission charge at all.",
                "Zero spend at the gate, please.",
            ),
        },
        "style": {
            "educational": (
                "I want to learn something and come away knowing more.",
                "Somewhere informative, where I can study and understand things.",
                "I'm after a visit that teaches me something.",
            ),
            "thrill seeking": (
                "I want something exciting that gets my pulse racing.",
                "Adrenaline is the point; scare me a little.",
                "The more heart-pounding, the better.",
            ),
            "relaxing": (
                "Something calm and unhurried where I can take it easy.",
                "A peaceful, low-key outing.",
                "I want a soothing visit with no rush at all.",
            ),
            "photography": (
                "I want great spots for taking pictures.",
                "Somewhere picturesque enough to fill my camera roll.",
                "Views worth sharing online are a priority for my camera.",
            ),
        },
        "feature_package": {
            "guided tour included": (
                "I'd like someone knowledgeable to lead us around, as part of the price.",
                "A person showing us around and explaining things, bundled in.",
                "Being walked through by an expert host would be ideal.",
            ),
            "skip the line access": (
                "I hate queuing, so I want to bypass the waiting crowds.",
                "Getting straight in without a long queue is important.",
                "No long waits at the entrance, please; fast-track entry.",
            ),
            "audio guide": (
                "I like listening to narrated commentary through headphones as I walk around.",
                "A recorded commentary I can play on a handset would be great.",
                "Give me something to listen to that explains each stop at my own pace.",
            ),
            "family bundle": (
                "We need a package deal covering parents and kids together.",
                "A combined pass for two adults and the children.",
                "Something priced for a whole household visiting together.",
            ),
        },
    },
    "dining": {
        "category": {
            "fine dining": (
                "A formal, elegant restaurant with white tablecloths and attentive waiters.",
                "Somewhere refined and dressy, with impeccable service.",
                "A sophisticated sit-down meal in a polished setting.",
            ),
            "casual dining": (
                "A relaxed sit-down restaurant, nothing formal.",
                "An easygoing place where we can turn up in jeans and order at the table.",
                "A laid-back eatery with table service.",
            ),
            "street food": (
                "Grab-and-go snacks from stalls and carts.",
                "I'd love to eat from vendors at a night market.",
                "Food trucks and hawker stalls are my thing.",
            ),
            "cafe": (
                "A coffee-house kind of spot with pastries and light bites.",
                "Somewhere to sip a latte with a sandwich.",
                "A small coffee shop for a light meal.",
            ),
        },
        "tier": {
            "michelin level": (
                "Only the most acclaimed, award-winning kitchens.",
                "A restaurant that top food critics rave about, with stars to its name.",
                "The pinnacle of gastronomy, whatever the price.",
            ),
            "upscale": (
                "A fancy, pricey place, though not necessarily world-famous.",
                "Somewhere classy and expensive-feeling.",
                "High-end, but not the ultimate celebrated temple of food.",
            ),
            "mid-range": (
                "Moderately priced, nothing extravagant.",
                "A reasonable bill for decent food.",
                "Middle-of-the-road prices are right for me.",
            ),
            "budget": (
                "Cheap eats, please; I'm keeping the spend low.",
                "It has to be something that won't break the bank.",
                "I want to pay as little as possible for the meal.",
            ),
        },
        "style": {
            "local cuisine": (
                "I want to taste the dishes this region is known for.",
                "Traditional regional recipes, cooked the way the locals eat them.",
                "Authentic home-grown flavours of the area, please.",
            ),
            "international cuisine": (
                "Food from around the world rather than the regional dishes.",
                "A global menu with dishes from many countries.",
                "I'm in the mood for foreign flavours from far away.",
            ),
            "vegetarian friendly": (
                "I don't eat meat, so there must be plenty of plant-based options.",
                "Meat-free choices are essential for me.",
                "Lots of veggie dishes, please; no meat for me.",
            ),
            "seafood focused": (
                "I'm craving fish and shellfish above everything.",
                "Oysters, prawns and the day's catch are what I want.",
                "Give me dishes straight from the ocean.",
            ),
        },
        "feature_package": {
            "private room": (
                "We'd like a separate enclosed space just for our party.",
                "A secluded room away from other diners.",
                "Somewhere we can close the door and have some privacy.",
            ),
            "outdoor seating": (
                "I'd like to eat outside in the fresh air.",
                "A table on a terrace or patio, please.",
                "Eating al fresco would be lovely.",
            ),
            "live music": (
                "A band performing while we eat would be great.",
                "I'd enjoy some performers playing tunes during dinner.",
                "Entertainment from musicians on a little stage, please.",
            ),
            "tasting menu": (
                "I'd love a sequence of many small chef-chosen courses.",
                "A set progression of little plates picked by the kitchen.",
                "Let the chef decide, with a multi-course sampling of dishes.",
            ),
        },
    },
    "shopping": {
        "category": {
            "shopping mall": (
                "A big indoor complex with lots of stores under one roof.",
                "One huge air-conditioned centre with every chain you can think of.",
                "A multi-storey retail complex with a food court.",
            ),
            "local market": (
                "Open-air stalls run by people from the area.",
                "A bustling bazaar where vendors sell their own goods.",
                "I like haggling at neighbourhood market stands.",
            ),
            "boutique district": (
                "A neighbourhood of small independent shops along charming streets.",
                "Streets lined with little designer stores.",
                "An area full of quirky one-off shops to wander between.",
            ),
            "outlet center": (
                "A place where brands sell off-season stock at reduced prices.",
                "Factory stores with marked-down goods.",
                "Somewhere selling last season's lines at big markdowns.",
            ),
        },
        "tier": {
            "luxury brands": (
                "Only the most prestigious, exclusive labels.",
                "Top-of-the-range names with the price tags to match.",
                "The most exclusive names money can buy.",
            ),
            "premium brands": (
                "Quality labels a step above the everyday ones, though not the most exclusive.",
                "Well-made, higher-end names short of the ultra-elite.",
                "Better-than-average brands, without going all out.",
            ),
            "mainstream brands": (
                "Ordinary, well-known high-street names.",
                "The everyday labels everyone recognises.",
                "Popular, widely available brands are fine.",
            ),
            "discount": (
                "Bargains and low prices are what I'm after.",
                "I'm hunting for cheap deals.",
                "The lower the price tag, the happier I am.",
            ),
        },
        "style": {
            "fashion": (
                "Mainly clothes, shoes and accessories.",
                "I want to update my wardrobe.",
                "I'm looking for apparel and stylish outfits.",
            ),
            "souvenirs and crafts": (
                "Handmade keepsakes and mementos to take home.",
                "Gifts made by local artisans.",
                "Little trinkets and handiwork that remind me of the trip.",
            ),
            "electronics": (
                "Gadgets: phones, cameras, headphones and the like.",
                "I'm after the latest tech and devices.",
                "Mainly laptops and digital gear.",
            ),
            "food and specialties": (
                "Regional delicacies and edible treats to bring back.",
                "Gourmet products like cheeses, sweets or spices.",
                "Tasty produce and specialty ingredients from the area.",
            ),
        },
        "feature_package": {
            "tax free shopping": (
                "I'd like to claim back the sales tax as a foreign visitor.",
                "Duty-exempt purchases for tourists would be great.",
                "Getting the VAT refunded when I leave matters to me.",
            ),
            "personal shopper service": (
                "I'd love an assistant who helps me pick items.",
                "Someone to accompany me and give styling advice.",
                "A dedicated helper who curates things for me.",
            ),
            "delivery to hotel": (
                "I don't want to carry bags, so have purchases sent to where I'm staying.",
                "Drop-off of my purchases at my accommodation would be great.",
                "Have everything brought to my room so my hands stay free.",
            ),
            "loyalty discounts": (
                "I want to earn rewards points and member savings.",
                "A membership card that gets me money off would be nice.",
                "Perks for repeat customers, like a points scheme.",
            ),
        },
    },
}

_INTROS: dict[str, tuple[str, ...]] = {
    "location": (
        "I'm trying to decide where to travel next.",
        "Help me choose a destination for my upcoming trip.",
        "I haven't picked where to go yet and would like a suggestion.",
    ),
    "transportation": (
        "I need to sort out how I'll get there.",
        "Please help me arrange the journey.",
        "I'm looking for the right way to make this trip.",
    ),
    "accommodation": (
        "I need somewhere to stay.",
        "Help me find a place to sleep during my trip.",
        "I'm looking for lodging.",
    ),
    "attraction": (
        "I want something worth visiting while I'm there.",
        "Help me pick a sight to see on my trip.",
        "Recommend somewhere to spend a day out.",
    ),
    "dining": (
        "I'm looking for somewhere to eat.",
        "Help me pick a place for a meal.",
        "Where should we go for food?",
    ),
    "shopping": (
        "I'd like to do some shopping while I'm away.",
        "Help me find somewhere to shop.",
        "I want to pick up a few things on my trip.",
    ),
}

_TIME_SENTENCES: tuple[str, ...] = (
    "The dates are {time}.",
    "I'll be travelling {time}.",
    "This is for {time}.",
)
_PLACE_SENTENCES: tuple[str, ...] = (
    "I'll be in {place}.",
    "The trip is to {place}.",
    "This is all in {place}.",
)
_PLACES: tuple[str, ...] = (
    "Lisbon, Portugal",
    "Kyoto, Japan",
    "Barcelona, Spain",
    "Vancouver, Canada",
    "Cape Town, South Africa",
    "Edinburgh, Scotland",
    "Hanoi, Vietnam",
    "Buenos Aires, Argentina",
    "Melbourne, Australia",
    "Prague, Czech Republic",
    "Marrakesh, Morocco",
    "Istanbul, Turkey",
    "Seoul, South Korea",
    "Reykjavik, Iceland",
    "Vienna, Austria",
    "Cusco, Peru",
    "Dubrovnik, Croatia",
    "Queenstown, New Zealand",
    "Oaxaca, Mexico",
    "Tbilisi, Georgia",
    "Copenhagen, Denmark",
    "Chiang Mai, Thailand",
    "Amsterdam, Netherlands",
    "the Amalfi Coast, Italy",
    "the Scottish Highlands",
    "Bali, Indonesia",
    "Montreal, Canada",
    "Porto, Portugal",
    "Singapore",
    "the Lake District, England",
)
_FIRST_DAY = _dt.date(2025, 1, 1)
_DAY_SPAN = 2 * 365  # start dates over two years
_MAX_NIGHTS = 10
_MAX_PER_TASK = QUERY_ID_BLOCK - 1
_PREFERENCE_COMBINATIONS = 4**4


def _digest(*parts: object) -> int:
    text = ":".join(str(part) for part in parts)
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16)


def _pick(options: Sequence[str], *parts: object) -> str:
    return options[_digest(*parts) % len(options)]


def _check_task(task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")


def query_id(task: str, index: int) -> str:
    """CostBench-form id of query ``index`` (from 0) of ``task``: see the module docstring."""
    _check_task(task)
    if not 0 <= index <= _MAX_PER_TASK - 1:
        raise ValueError(f"query index must be in 0..{_MAX_PER_TASK - 1}, got {index}")
    return f"<Query{TASKS.index(task) * QUERY_ID_BLOCK + index + 1:05d}>"


@lru_cache(maxsize=64)
def _combination_order(task: str, seed: int, cycle: int) -> tuple[tuple[str, ...], ...]:
    """All 256 preference combinations of ``task`` in a seeded order (one per cycle)."""
    values = [PREFERENCE_VALUES[task][d] for d in DIMENSIONS]
    combos = list(itertools.product(*values))
    return tuple(sorted(combos, key=lambda c: _digest(seed, task, "order", cycle, "|".join(c))))


def _time_info(seed: int, task: str, index: int) -> str:
    start = _FIRST_DAY + _dt.timedelta(days=_digest(seed, task, index, "start") % _DAY_SPAN)
    nights = 1 + _digest(seed, task, index, "nights") % _MAX_NIGHTS
    end = start + _dt.timedelta(days=nights)
    return f"{start.isoformat()} to {end.isoformat()}"


def _compose_text(
    task: str,
    preferences: Mapping[str, str],
    time_info: str,
    place: str | None,
    seed: int,
    index: int,
) -> str:
    sentences = [
        _pick(_PHRASES[task][d][preferences[d]], seed, task, index, "phrase", d) for d in DIMENSIONS
    ]
    # Shuffle the four preference sentences by a digest-ordered key.
    order = sorted(range(len(sentences)), key=lambda k: _digest(seed, task, index, "order", k))
    parts = [_pick(_INTROS[task], seed, task, index, "intro")]
    parts.extend(sentences[k] for k in order)
    parts.append(_pick(_TIME_SENTENCES, seed, task, index, "when").format(time=time_info))
    if place is not None:
        parts.append(_pick(_PLACE_SENTENCES, seed, task, index, "where").format(place=place))
    return " ".join(parts)


def generate_queries(task: str, n: int, *, seed: int = 42) -> list[Query]:
    """``n`` reproducible queries for ``task`` (ids, preferences, dates, place, vague text)."""
    _check_task(task)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    if n > _MAX_PER_TASK:
        raise ValueError(f"at most {_MAX_PER_TASK} queries per task (id block), got {n}")
    queries = []
    for index in range(n):
        cycle, position = divmod(index, _PREFERENCE_COMBINATIONS)
        combo = _combination_order(task, seed, cycle)[position]
        preferences = dict(zip(DIMENSIONS, combo, strict=True))
        time_info = _time_info(seed, task, index)
        place = None if task == "location" else _pick(_PLACES, seed, task, index, "place")
        queries.append(
            Query(
                query_id=query_id(task, index),
                task=task,
                preferences=preferences,
                time_info=time_info,
                location_preference=place,
                text=_compose_text(task, preferences, time_info, place, seed, index),
            )
        )
    return queries


def allowed_values(task: str) -> dict[str, tuple[str, ...]]:
    """The allowed value of each preference parameter (e.g. ``DiningTier``) of ``task``.

    These are the ``enum`` lists of the ``Decide_<Task>_Preference`` tool spec.
    """
    _check_task(task)
    return {dimension_type(task, d): PREFERENCE_VALUES[task][d] for d in DIMENSIONS}


def allowed_values_text(task: str) -> str:
    """One line per preference parameter listing its allowed values, for a prompt."""
    return "\n".join(
        f"{name}: {', '.join(values)}" for name, values in allowed_values(task).items()
    )


# ---------------------------------------------------------------------- files


class QueryFileError(ValueError):
    """A query file entry that cannot be used; the message is one line naming file and entry."""


_REQUIRED_FIELDS: tuple[str, ...] = (
    "query_id",
    "task",
    "preferences",
    "TimeInfo",
    "location_preference",
    "query",
)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def query_to_dict(query: Query) -> dict[str, Any]:
    """A query in CostBench's file layout (see the module docstring)."""
    return {
        "query_id": query.query_id,
        "task": query.task,
        "preferences": {d: query.preferences[d] for d in DIMENSIONS},
        "TimeInfo": query.time_info,
        "location_preference": query.location_preference,
        "query": {"input": query.text},
    }


def _entry_problem(entry: object) -> tuple[str | None, Query | str]:
    """``(query_id or None, Query)`` for a valid entry, ``(query_id or None, problem)`` else."""
    if not isinstance(entry, Mapping):
        return None, f"expected a JSON object, got {type(entry).__name__}"
    raw_id = entry.get("query_id")
    qid = raw_id if isinstance(raw_id, str) and raw_id.strip() else None
    missing = [name for name in _REQUIRED_FIELDS if name not in entry]
    if missing:
        return qid, (
            f"missing field(s) {', '.join(missing)}; required: {', '.join(_REQUIRED_FIELDS)}"
        )
    if qid is None:
        return None, f"query_id must be a non-empty string, got {raw_id!r}"
    task = entry["task"]
    if task not in TASKS:
        return qid, f"unknown task {task!r}; allowed: {', '.join(TASKS)}"
    prefs = entry["preferences"]
    if not isinstance(prefs, Mapping):
        return qid, f"preferences must be an object with keys {', '.join(DIMENSIONS)}"
    unknown = sorted(str(k) for k in prefs if k not in DIMENSIONS)
    if unknown:
        return qid, (
            f"unknown preference dimension(s) {', '.join(map(repr, unknown))}; "
            f"allowed: {', '.join(DIMENSIONS)}"
        )
    for dim in DIMENSIONS:
        allowed = PREFERENCE_VALUES[task][dim]
        if dim not in prefs:
            return qid, (
                f"preferences lack {dim!r}; allowed {task} {dim} values: {', '.join(allowed)}"
            )
        if prefs[dim] not in allowed:
            return qid, (
                f"preferences[{dim!r}] = {prefs[dim]!r} is not a {task} {dim} value; "
                f"allowed: {', '.join(allowed)}"
            )
    time_info = entry["TimeInfo"]
    if not isinstance(time_info, str) or not time_info.strip():
        return qid, f"TimeInfo must be a non-empty string, got {time_info!r}"
    place = entry["location_preference"]
    if task == "location":
        if place is not None:
            return qid, f"location_preference must be null for the location task, got {place!r}"
    elif not isinstance(place, str) or not place.strip():
        return qid, f"location_preference must be a non-empty string for {task}, got {place!r}"
    body = entry["query"]
    text = body.get("input") if isinstance(body, Mapping) else None
    if not isinstance(text, str) or not text.strip():
        return qid, 'query must be an object {"input": <non-empty text>}'
    preferences = {d: str(prefs[d]) for d in DIMENSIONS}
    return qid, Query(qid, task, preferences, time_info, place, text)


def query_from_dict(entry: Mapping[str, Any]) -> Query:
    """One query from CostBench's layout; ``ValueError`` (one line) when it is not valid."""
    qid, result = _entry_problem(entry)
    if isinstance(result, str):
        raise ValueError(_one_line(f"query {qid or '(no query_id)'}: {result}"))
    return result


def _read_entries(path: Path) -> list[tuple[str, object]]:
    """``(label, parsed JSON)`` per entry; label names the entry's index (and JSONL line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise QueryFileError(
            f"{path}: not UTF-8 text (byte {exc.start}); expected a JSON list or JSONL file"
        ) from None
    except OSError as exc:
        raise QueryFileError(_one_line(f"{path}: cannot be read ({exc.strerror})")) from None
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        try:
            whole = json.loads(text)
        except RecursionError:
            raise QueryFileError(f"{path}: JSON nested too deeply to be a query file") from None
        except json.JSONDecodeError as exc:
            if stripped.startswith("["):
                raise QueryFileError(
                    _one_line(
                        f"{path}: line {exc.lineno}: not valid JSON ({exc.msg}); expected a "
                        "JSON list of query objects or one object per line (JSONL)"
                    )
                ) from None
        else:
            if isinstance(whole, list):
                return [(f"entry {i}", item) for i, item in enumerate(whole)]
            return [("entry 0", whole)]
    entries: list[tuple[str, object]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        label = f"entry {len(entries)} (line {lineno})"
        try:
            entries.append((label, json.loads(line)))
        except RecursionError:
            raise QueryFileError(
                f"{path}: {label}: JSON nested too deeply to be a query object"
            ) from None
        except json.JSONDecodeError as exc:
            raise QueryFileError(
                _one_line(
                    f"{path}: {label}: not valid JSON ({exc.msg}); expected a JSON list of "
                    "query objects or one object per line (JSONL)"
                )
            ) from None
    return entries


def load_queries(path: str | os.PathLike[str]) -> list[Query]:
    """Queries from a JSON list or JSONL file in CostBench's layout.

    Raises :class:`QueryFileError` (one line: file, entry index and query_id, the problem and
    what is allowed) for invalid JSON, an unknown task, a missing or unknown preference
    value, a missing field, duplicate ids or an empty file.
    """
    path = Path(path)
    entries = _read_entries(path)
    if not entries:
        raise QueryFileError(f"{path}: no queries found; expected a JSON list or JSONL file")
    queries: list[Query] = []
    seen: dict[str, str] = {}
    for label, entry in entries:
        qid, result = _entry_problem(entry)
        where = f"{path}: {label} (query_id {qid!r})" if qid else f"{path}: {label}"
        if isinstance(result, str):
            raise QueryFileError(_one_line(f"{where}: {result}"))
        if result.query_id in seen:
            raise QueryFileError(
                _one_line(
                    f"{where}: duplicate query_id (first used by {seen[result.query_id]}); "
                    "query ids must be unique"
                )
            )
        seen[result.query_id] = label
        queries.append(result)
    return queries


def dump_queries(path: str | os.PathLike[str], queries: Iterable[Query]) -> None:
    """Write ``queries`` in CostBench's layout: JSONL if ``path`` ends in ``.jsonl``, else a
    JSON list (UTF-8, indented)."""
    path = Path(path)
    rows = [query_to_dict(q) for q in queries]
    if path.suffix.lower() == ".jsonl":
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    else:
        text = json.dumps(rows, ensure_ascii=False, indent=2) + "\n"
    path.write_text(text, encoding="utf-8")
