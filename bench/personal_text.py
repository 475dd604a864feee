"""Texts of the long personal chats (:mod:`bench.personal_chats`): everyday talk and names.

The filler has no digits, dates, weekdays or month names and none of the names the planted
facts draw from, so a planted answer occurs only where it was planted (the generator checks
it). Each filler message is a few sentences drawn from one topic; a slot ``{x}`` takes a
word from :data:`SLOTS`.
"""

from __future__ import annotations

#: Everyday topics the user talks about: sentences a message draws from.
TOPICS: dict[str, tuple[str, ...]] = {
    "work": (
        "Work was a lot today; the {thing} review took most of the morning.",
        "I keep getting pulled into meetings that could have been an email.",
        "My team is trying a new way of planning the week and I am not sure it helps.",
        "I finally finished the report I was dreading and it felt {feeling}.",
        "A colleague asked me to help with the {thing} project, which I actually enjoyed.",
        "The office was quiet because half the team was working from home.",
        "I spent the afternoon cleaning up old files nobody had touched in ages.",
        "I want to ask for more responsibility but I do not know how to bring it up.",
    ),
    "home": (
        "The kitchen tap started dripping again and it drives me mad at night.",
        "We moved the sofa around and the living room feels {feeling} now.",
        "I spent the whole evening sorting the {thing} cupboard.",
        "The neighbours are redoing their garden so it has been noisy all week.",
        "I bought a new lamp for the hallway and it makes the place much warmer.",
        "Laundry keeps piling up no matter how often I do it.",
        "We are thinking about painting the bedroom a softer colour.",
        "The plants on the balcony are finally growing after a slow start.",
    ),
    "cooking": (
        "I tried a new {food} recipe and it turned out {feeling}.",
        "Cooking on weeknights is hard when I get home late.",
        "I want to eat less takeaway and cook more at home.",
        "The market had lovely vegetables, so I made a big pot of soup.",
        "I burned the onions again because I was reading my phone.",
        "We are trying to plan meals for the whole week on the weekend.",
        "My partner made {food} for dinner and it was the best in a while.",
        "I should learn a few quick recipes that keep well for lunch.",
    ),
    "health": (
        "I have been sleeping badly and I feel {feeling} in the mornings.",
        "I went for a long walk by the river and it cleared my head.",
        "I am trying to drink more water and less coffee during the day.",
        "My back hurts after long days at the desk.",
        "Yoga in the evening seems to help me wind down.",
        "I skipped the gym this week and I can feel it.",
        "I want to get outside more now that the evenings are lighter.",
        "Stretching before bed has made a small but real difference.",
    ),
    "family": (
        "My parents called and we talked for ages about nothing in particular.",
        "The kids were {feeling} after school and did not want to do homework.",
        "We played board games on the weekend and everyone got competitive.",
        "My cousin is thinking about moving abroad for work.",
        "Family dinners are harder to organise now that everyone is busy.",
        "I want to spend more time with my grandparents while I can.",
        "My partner and I finally had a quiet evening to ourselves.",
        "The family group chat has been full of old holiday photos.",
    ),
    "hobbies": (
        "I picked up the guitar again after months and my fingers hurt.",
        "I am reading a novel about a {thing} and cannot put it down.",
        "Photography walks in the old town are my favourite way to relax.",
        "I started a small puzzle and it is taking over the dining table.",
        "I want to learn to draw but I never find the time.",
        "The local choir is looking for new voices and I am tempted.",
        "I spent a lazy afternoon watching an old film series.",
        "Gardening has become my favourite way to spend a free morning.",
    ),
    "money": (
        "We are trying to keep a closer eye on what we spend each month.",
        "Groceries seem to cost more every time I go shopping.",
        "I cancelled a few subscriptions we never used.",
        "Saving for something specific makes it easier to stick to a budget.",
        "I want to understand our bills better instead of just paying them.",
        "We put a little aside for a rainy day fund.",
        "Impulse buying online is my weak spot, especially late at night.",
        "I compared energy offers and the paperwork was {feeling}.",
    ),
}

#: Words the slots take.
SLOTS: dict[str, tuple[str, ...]] = {
    "thing": ("budget", "supplier", "onboarding", "website", "quarterly", "training",
              "archive", "customer", "lighthouse", "garden"),
    "feeling": ("great", "strange", "exhausting", "surprisingly good", "a bit chaotic",
                "calm", "rewarding", "frustrating"),
    "food": ("lentil curry", "lasagne", "mushroom risotto", "fish stew", "pancake",
             "vegetable pie", "noodle soup", "chickpea salad"),
}

#: The assistant's replies to everyday talk: sentences a reply draws from.
REPLY_SENTENCES: tuple[str, ...] = (
    "That sounds like a lot to carry at once.",
    "It is good that you noticed it early.",
    "A small routine can make a big difference over a few weeks.",
    "Would it help to write down what you want to change first?",
    "Try to be kind to yourself on the harder days.",
    "That is worth celebrating, even if it feels small.",
    "You could try one change at a time and see how it feels.",
    "It sounds like you already know what matters most to you here.",
    "Talking it through with the people involved often helps.",
    "Keeping a short note of how each day went might show a pattern.",
    "I am glad that went well for you.",
    "If it keeps bothering you, it may be worth asking someone for advice.",
    "Taking a break before deciding is often the wise choice.",
    "It is normal for these things to take a while to settle.",
    "A little planning on the weekend can save stress during the week.",
    "That sounds lovely; moments like that are worth making time for.",
    "Let me know how it goes, I am happy to help you think it through.",
    "You might enjoy it more if you keep it simple at first.",
)

#: Openings of a session's first message (the date is put in front).
GREETINGS: tuple[str, ...] = (
    "Hi again, it has been a few days.",
    "Hello, I am back with more news.",
    "Good to talk again, quite a lot happened.",
    "Hey, I have some updates for you.",
)

# -- names and values the planted facts draw from (never in the filler) ------------------------

PETS = ("Biscuit", "Pepper", "Juniper", "Mochi", "Waffles", "Clover")
MANAGERS = ("Ingrid", "Priya", "Solveig", "Marisol", "Yuki", "Odette")
SISTERS = ("Ana", "Lucia", "Mirela", "Teodora", "Greta", "Noor")
BROTHERS = ("Tomas", "Emil", "Rafael", "Jonas", "Dario", "Kenji")
FRIENDS = ("Beatrix", "Halvard", "Ottilie", "Leandro", "Signe", "Ciaran")
CITIES = ("Porto", "Ghent", "Ljubljana", "Bergen", "Valencia", "Krakow")
VENUES = ("the Orangery at Villa Serena", "the old Harbour Chapel", "the Botanical Pavilion",
          "the Rosewood Barn", "the Cliffside Terrace", "the Stone Mill Hall")
TRIPS = ("Madeira", "Sardinia", "the Azores", "Crete", "Iceland", "the Dolomites")
CAFES = ("Cafe Lumen", "the Copper Kettle", "Bluebird Books", "the Olive Room",
         "Tea and Tides", "the Paper Lantern")
SPREADSHEETS = ("Nest Egg Tracker", "Rainy Day Ledger", "Pocket Compass", "Acorn Fund",
                "Harbour Savings", "Little Lighthouse")
GIFTS = ("silk scarf", "pottery class voucher", "cast-iron teapot", "framed family map",
         "wool blanket", "herb garden kit")
