"""benchmarks/wish_bench: the people, the split, every hand check on a clearly met and a clearly unmet reply,
and the item generator end to end on the tiny random model."""

import collections
import json

import pytest

from benchmarks.wish_bench import checks, people
from benchmarks.wish_bench.checks import met

# wish id -> (request index, a reply that clearly meets the wish, one that clearly does not)
EXAMPLES: dict[str, tuple[int, str, str]] = {
    # ------------------------------------------------------------ work_email
    "work_email.no_hope_well": (
        0, "Hi Priya,\n\nCould we move Thursday's 1:1 to Friday morning? I have a dentist appointment.\n\nSam",
        "Hi Priya,\n\nI hope this email finds you well. Could we move our 1:1 to Friday?\n\nSam"),
    "work_email.sign_sam": (
        0, "Hi Priya,\n\nCould we move our 1:1 to Friday morning?\n\nBest,\nSam",
        "Hi Priya,\n\nCould we move our 1:1 to Friday morning?\n\nBest,\nSam\n\nLet me know if you want changes."),
    "work_email.subject_first": (
        1, "**Subject:** Third-floor printer jammed\n\nHi team,\n\nThe printer has been jammed since Monday.",
        "Hi team,\n\nThe third-floor printer has been jammed since Monday.\n\nSubject: printer"),
    "work_email.under_120": (
        2, "Dear Mr. Okafor,\n\nThe revised quote will reach you by Wednesday.\n\nKind regards,\nSam",
        "Hi Mr. Okafor,\n\n" + "I am writing to confirm the revised quote and its details. " * 14 + "\n\nSam"),
    "work_email.no_apology": (
        0, "Hi Priya,\n\nI have a dentist appointment on Thursday. Could we meet on Friday morning instead?\n\nSam",
        "Hi Priya,\n\nSorry for the short notice, could we move our 1:1 to Friday?\n\nSam"),
    "work_email.no_exclamation": (
        3, "Hi team,\n\nThe office is closed next Monday for the public holiday.\n\nSam",
        "Hi team,\n\nGood news: the office is closed next Monday! Enjoy the long weekend.\n\nSam"),
    "work_email.hi_not_dear": (
        2, "Subject: Revised quote\n\nHi Mr. Okafor,\n\nThe revised quote will reach you by Wednesday.\n\nSam",
        "Dear Mr. Okafor,\n\nThe revised quote will reach you by Wednesday.\n\nSam"),
    # ------------------------------------------------------------ code_review
    "code_review.verdict_first": (
        0, "**NEEDS WORK**\n\n- line 6 divides by zero when `xs` is empty.",
        "The function looks fine overall, but it fails on an empty list.\n\nNEEDS WORK"),
    "code_review.no_rewrite": (
        0, "Line 6 divides by zero for an empty list; the loop could be the built-in sum.",
        "Here is a better version:\n```python\ndef avg(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n```"),
    "code_review.line_refs": (
        3, "Line 4 opens the file and never closes it; a with block would close it.",
        "The file is opened and never closed; a with block would close it."),
    "code_review.max_3_bullets": (
        0, "- line 6: division by zero on []\n- the loop is sum()\n- no other issues",
        "- line 6: division by zero\n- the loop is sum()\n- xs is a vague name\n- no tests"),
    "code_review.no_hints_docstrings": (
        0, "Line 6 raises ZeroDivisionError when the list is empty.",
        "Line 6 fails on an empty list. Also add type hints and a docstring."),
    "code_review.tldr_last": (
        2, "Line 3 builds SQL by concatenating the name, which allows SQL injection.\n\n"
           "**TL;DR:** use a parameterised query.",
        "TL;DR: SQL injection.\n\nLine 3 builds SQL by concatenating the name; use a parameterised query."),
    "code_review.no_you": (
        2, "The code concatenates the name into the SQL string on line 3, which allows injection.",
        "You concatenate the name into the SQL string, so your query allows injection."),
    # ------------------------------------------------------------ support_agent
    "support_agent.greet_first_name": (
        0, "Hi Dana,\n\nI'm sorry the mug arrived cracked. A replacement for order #48213 ships today.",
        "Dear Ms. Whitfield,\n\nA replacement for order #48213 ships today."),
    "support_agent.quote_number": (
        1, "Hi Marcus, I've refunded the second charge on invoice #7731.",
        "Hi Marcus, I've refunded the second charge on your invoice."),
    "support_agent.no_inconvenience": (
        3, "Hi Tom, thanks for your patience with ticket #5590. I've passed the logs to our Android team.",
        "Hi Tom, we apologize for any inconvenience this has caused. Ticket #5590 is with our team."),
    "support_agent.sign_team": (
        0, "Hi Dana,\n\nA replacement mug ships today.\n\nBest,\nThe Brightline Support Team",
        "Hi Dana,\n\nA replacement mug ships today.\n\nBest,\nDana's support agent"),
    "support_agent.under_90": (
        2, "Hi Aisha, I've sent a new reset link to your email. It works for 24 hours.",
        "Hi Aisha, " + "here is one more step you can try to reset the password on your account. " * 7),
    "support_agent.timeframe": (
        0, "Hi Dana, a replacement mug for order #48213 will reach you within 3 business days.",
        "Hi Dana, a replacement mug for order #48213 is on its way soon."),
    "support_agent.no_links": (
        2, "Hi Aisha, I've reset the link on my side; the new email will arrive shortly.",
        "Hi Aisha, you can reset it at https://brightline.example/reset."),
    "support_agent.i_not_we": (
        1, "Hi Marcus, I checked invoice #7731 and I have refunded the second charge.",
        "Hi Marcus, we checked invoice #7731 and our team refunded the second charge."),
    # ------------------------------------------------------------ home_cook
    "home_cook.metric": (
        0, "- 200 g spaghetti\n- 400 g tinned tomatoes\n- 15 ml olive oil\n- 2 cloves garlic",
        "- 8 oz spaghetti\n- 2 cups tinned tomatoes\n- 1 tbsp olive oil"),
    "home_cook.time_first_line": (
        0, "Total: 25 min\n\n1. Boil the pasta.\n2. Simmer the tomatoes.",
        "Tomato pasta\n\n1. Boil the pasta for 10 minutes.\n2. Simmer the tomatoes."),
    "home_cook.vegetarian": (
        2, "Chickpea and spinach pilaf: fry onion, add rice, chickpeas and stock, then fold in the spinach.",
        "Fry some bacon, then add the rice, chickpeas and spinach."),
    "home_cook.numbered_steps": (
        1, "1. Whisk flour, milk and eggs.\n2. Heat a pan.\n3. Cook each pancake for 2 minutes a side.",
        "Whisk flour, milk and eggs, heat a pan and cook each pancake for 2 minutes a side."),
    "home_cook.serves_four": (
        0, "Serves 4.\n\n- 400 g spaghetti\n- 800 g tinned tomatoes",
        "Serves 2.\n\n- 200 g spaghetti\n- 400 g tinned tomatoes"),
    "home_cook.no_oven": (
        1, "Mix the flour with baking powder, milk and eggs, then fry ladlefuls in a hot pan.",
        "Mix the batter, pour it into a tray and bake at 200 C for 20 minutes."),
    "home_cook.leftovers_last": (
        3, "Stir the oats into hot milk and top with banana.\n\n**Leftovers:** keep in the fridge for a day.",
        "Leftovers: keep in the fridge for a day.\n\nStir the oats into hot milk and top with banana."),
    # ------------------------------------------------------------ traveller
    "traveller.no_prices": (
        1, "Start at Fushimi Inari early, then walk through Gion and end at Kiyomizu-dera at sunset.",
        "Start at Fushimi Inari (free), then the Golden Pavilion (entry 500 yen)."),
    "traveller.times_of_day": (
        1, "**Morning:** Fushimi Inari\n**Afternoon:** Gion and Nishiki Market\n**Evening:** Pontocho",
        "Visit Fushimi Inari first, then Gion and Nishiki Market, and finish at Pontocho."),
    "traveller.no_car": (
        0, "Take tram 28 to Alfama and the train to Sintra on day 2.",
        "Rent a car on day 2 and drive to Sintra."),
    "traveller.one_must_eat": (
        2, "Day 1: Zócalo and the cathedral.\nDay 2: Coyoacán.\n\nMust eat: tacos al pastor.",
        "Day 1: Zócalo.\nMust eat: tacos al pastor.\nDay 2: Coyoacán.\nMust eat: churros."),
    "traveller.km": (
        3, "The Royal Mile is about 1.6 km long, and Arthur's Seat is 2 km from it.",
        "The Royal Mile is about a mile long, and Arthur's Seat is 1.2 miles from it."),
    "traveller.end_one_question": (
        0, "Day 1: Alfama. Day 2: Belém. Day 3: Sintra.\n\nDo you prefer museums or viewpoints?",
        "Day 1: Alfama. Day 2: Belém. Day 3: Sintra.\n\nEnjoy your trip!"),
    "traveller.call_jo": (
        1, "Here's your day in Kyoto, Jo: Fushimi Inari, Gion, Kiyomizu-dera.",
        "Here's your day in Kyoto: Fushimi Inari, Gion, Kiyomizu-dera. Joking aside, go early."),
    # ------------------------------------------------------------ summaries
    "summaries.exactly_3_bullets": (
        0, "- 12 km of bike lanes approved\n- work starts in April\n- lost parking moves behind the library",
        "Here is the summary:\n- 12 km of bike lanes approved\n- work starts in April\n- parking moves"),
    "summaries.one_sentence": (
        0, "The council approved 12 km of bike lanes, starting in April, and moves the lost parking.",
        "The council approved 12 km of bike lanes. Work starts in April."),
    "summaries.keep_numbers": (
        1, "From 1 June, expenses under 50 euros need no approval; receipts are due within 14 days; trains are "
           "the default under 500 km; hotels are capped at 120 euros, or 180 in London and Paris.",
        "Small expenses no longer need approval, receipts are due within two weeks, and hotels are capped."),
    "summaries.in_short_start": (
        2, "In short: sleeping after learning helps you remember more.",
        "Sleeping after learning helps you remember more, in short."),
    "summaries.no_meta_opening": (
        2, "Sleeping 8 hours after learning boosted recall by 20 percent.",
        "The text describes a study in which sleep boosted recall."),
    "summaries.max_40": (
        3, "Good sound and 30-hour battery, weak noise cancelling on planes, a peeling cushion after two months.",
        "The reviewer bought the Corvo Air headphones three months ago and finds the sound clear and the battery "
        "long, about 30 hours, but the noise cancelling is weak on planes, the left ear cushion peeled after "
        "two months, and support took 10 days to replace it."),
    "summaries.french": (
        0, "Le conseil a voté pour 12 km de pistes cyclables. Les travaux commencent en avril et les places de "
           "parking sont déplacées derrière la bibliothèque.",
        "The council voted for 12 km of bike lanes, and the work starts in April."),
    "summaries.own_words": (
        3, "Good sound and a long battery, but weak noise cancelling in the air and a cushion that peeled.",
        "The sound is clear and the battery really does last about 30 hours. The cushion peeled."),
    # ------------------------------------------------------------ study_notes
    "study_notes.bold_terms": (
        0, "- **Chlorophyll** absorbs light.\n- **Glucose** is the sugar plants make.",
        "## Photosynthesis\n- Chlorophyll absorbs light.\n- Glucose is the sugar plants make."),
    "study_notes.quiz_end": (
        3, "The heart has four chambers.\n\nQuiz:\n1. How many chambers?\n2. Which side pumps to the lungs?\n"
           "3. What do valves do?",
        "Quiz:\n1. How many chambers?\n2. Which side pumps to the lungs?\n3. What do valves do?\n\nGood luck!"),
    "study_notes.mnemonic": (
        1, "Causes: debt, hunger, Enlightenment ideas.\n\nMnemonic: Dogs Hate Eggs.",
        "Causes: debt, hunger, Enlightenment ideas. Remember them as D-H-E."),
    "study_notes.hash_headings": (
        2, "## Demand\n- price up, demand down\n## Supply\n- price up, supply up",
        "**Demand**\n- price up, demand down\n**Supply**\n- price up, supply up"),
    "study_notes.short_bullets": (
        2, "- Demand falls when price rises.\n- Supply rises when price rises.",
        "- Demand usually falls when the price of a good rises, because buyers switch to cheaper "
        "substitutes or simply buy less of it."),
    "study_notes.big_idea_first": (
        0, "**Big idea:** plants turn light into sugar.\n\n- happens in chloroplasts",
        "Photosynthesis notes\n\nBig idea: plants turn light into sugar."),
    "study_notes.no_years": (
        1, "- The state was deep in debt.\n- Bread prices rose and people went hungry.",
        "- In 1789 the state was deep in debt.\n- The Bastille fell on 14 July."),
    "study_notes.think_of_it": (
        3, "The heart has two pumps side by side. Think of it like a two-room pump house.",
        "The heart has two pumps side by side, one for the lungs and one for the body."),
    # ------------------------------------------------------------ cover_letter
    "cover_letter.no_passionate": (
        0, "I enjoy finding patterns in data and would like to do that at Northwind Logistics.",
        "I am passionate about data and would love to join Northwind Logistics."),
    "cover_letter.company_twice": (
        2, "I would like to join Lumio. Three years on the phones taught me what Lumio's customers need.",
        "I would like to join your company. Three years on the phones taught me what customers need."),
    "cover_letter.sign_full_name": (
        1, "Dear Bean There Cafe team,\n\nI would love to make your coffee.\n\nKind regards,\nAlex Moreno",
        "Dear Bean There Cafe team,\n\nI would love to make your coffee.\n\nKind regards,\n[Your Name]"),
    "cover_letter.no_placeholders": (
        0, "Dear Northwind Logistics team,\n\nMy statistics degree prepared me well.\n\nAlex Moreno",
        "Dear [Hiring Manager's Name],\n\nMy statistics degree prepared me well.\n\n[Your Name]"),
    "cover_letter.under_250": (
        1, "Dear Bean There Cafe,\n\nTwo years in retail taught me to serve people well.\n\nAlex Moreno",
        "Dear Bean There Cafe,\n\n" + "I have learned a great deal about serving customers in retail. " * 25),
    "cover_letter.no_dear_hiring": (
        2, "Hello Lumio team,\n\nI spent three years in a call centre.",
        "Dear Hiring Manager,\n\nI spent three years in a call centre."),
    "cover_letter.digits_duration": (
        0, "During my 6-month internship at a bank I built weekly reports.",
        "During my six-month internship at a bank I built weekly reports."),
    # ------------------------------------------------------------ parent
    "parent.no_screens": (
        0, "1. Build a blanket fort.\n2. Bake-free salt dough models.\n3. A treasure hunt.",
        "1. Build a blanket fort.\n2. Have a movie afternoon with popcorn."),
    "parent.five_numbered": (
        0, "1. Blanket fort\n2. Treasure hunt\n3. Salt dough\n4. Shadow puppets\n5. Indoor bowling",
        "1. Blanket fort\n2. Treasure hunt\n3. Salt dough"),
    "parent.shopping_list_end": (
        1, "Games: sack race, treasure hunt.\n\nShopping list:\n- sacks\n- balloons\n- paper plates",
        "Shopping list:\n- sacks\n- balloons\n\nHave a great party!"),
    "parent.no_sweets": (
        1, "Games: sack race and a treasure hunt with small toys. Food: fruit skewers and sandwiches.",
        "Games: sack race. Food: a big chocolate cake and cupcakes."),
    "parent.hi_maria": (
        2, "Hi Maria! Here are some park ideas for you and Theo:\n- bug hunt\n- sandpit castles",
        "Here are some park ideas for you and Theo, Maria:\n- bug hunt"),
    "parent.kid_names": (
        0, "Leo can build the fort while Mia writes the treasure-hunt clues.",
        "The younger one can build the fort while the older one writes the clues."),
    "parent.safety_last": (
        2, "- bug hunt\n- sandpit castles\n\nSafety: bring sun cream and keep water handy.",
        "Safety: bring sun cream.\n\n- bug hunt\n- sandpit castles"),
    # ------------------------------------------------------------ product_copy
    "product_copy.no_superlatives": (
        0, "Our lavender soy candle (200 g) burns for about 40 hours.",
        "The perfect lavender candle: 200 g, about 40 hours of burn time."),
    "product_copy.keep_specs": (
        3, "A set of three beeswax wraps: 20 cm, 25 cm and 33 cm squares.",
        "A set of beeswax wraps in small, medium and large."),
    "product_copy.we_voice": (
        1, "We throw each mug by hand in our studio. It holds 350 ml and is dishwasher safe.",
        "The brand throws each mug by hand. It holds 350 ml and is dishwasher safe."),
    "product_copy.under_80": (
        2, "A plant-dyed linen tea towel, 50 x 70 cm, soft from the first wash.",
        "A plant-dyed linen tea towel. " + "Soft, strong and made to last for many years of daily use. " * 8),
    "product_copy.cornwall_last": (
        0, "LAVENDER SOY CANDLE\n200 g, about 40 hours.\n\nHandmade in Cornwall.",
        "Handmade in Cornwall.\n\nLavender soy candle, 200 g, about 40 hours."),
    "product_copy.no_questions": (
        1, "A hand-thrown mug that holds 350 ml and goes in the dishwasher.",
        "Looking for a gift? This hand-thrown mug holds 350 ml."),
    "product_copy.caps_title": (
        2, "LINEN TEA TOWEL\n\nPlant-dyed, 50 x 70 cm.",
        "Linen Tea Towel\n\nPlant-dyed, 50 x 70 cm."),
    # ------------------------------------------------------------ fitness
    "fitness.bodyweight_only": (
        2, "Squats 3x12, lunges 3x10 each leg, glute bridges 3x15.",
        "Goblet squats with a dumbbell 3x12, then the leg press machine."),
    "fitness.sets_x_reps": (
        0, "Squats 3x10, push-ups 3x8, plank 3 times for 20 seconds.",
        "Do some squats, a few push-ups and a plank."),
    "fitness.no_diet": (
        0, "Monday: squats and push-ups. Wednesday: lunges and plank. Friday: a brisk walk.",
        "Monday: squats and push-ups. Eat more protein and drink plenty of water."),
    "fitness.call_chris": (
        1, "Chris, start with 1 minute of running and 2 of walking, eight times.",
        "Start with 1 minute of running and 2 of walking, eight times."),
    "fitness.max_4_bullets": (
        3, "- neck rolls\n- shoulder shrugs\n- seated twist\n- hip flexor stretch",
        "- neck rolls\n- shoulder shrugs\n- seated twist\n- hip flexor stretch\n- calf stretch"),
    "fitness.no_doctor": (
        1, "Run 1 minute, walk 2 minutes, and add 30 seconds of running each week.",
        "Check with your doctor first, then run 1 minute and walk 2 minutes."),
    "fitness.seconds": (
        3, "Hold each stretch for 30 seconds and repeat twice.",
        "Hold each stretch for a little while and repeat twice."),
    # ------------------------------------------------------------ english_learner
    "english_learner.spanish": (
        0, "\"Break the ice\" significa empezar una conversación cuando la gente no se conoce y está un poco "
           "incómoda. Se usa mucho en fiestas o reuniones de trabajo.",
        "\"Break the ice\" means starting a conversation when people don't know each other and feel awkward."),
    "english_learner.example_line": (
        0, "It means starting a conversation with strangers.\nExample: She told a joke to break the ice.",
        "It means starting a conversation with strangers, like telling a joke at a party."),
    "english_learner.short_sentences": (
        2, "Say \"I agree\". \"Agree\" is already a verb. You do not need \"am\".",
        "You should say \"I agree\" because \"agree\" is already a verb in English and it does not need the "
        "word \"am\" in front of it."),
    "english_learner.no_jargon": (
        1, "\"Used to\" talks about a habit in the past: I used to swim every day.",
        "\"Used to\" is followed by the infinitive without \"to\": I used to swim."),
    "english_learner.under_100": (
        3, "You borrow from someone; you lend to someone.",
        "You borrow from someone. " + "You lend something to someone else so that they can use it. " * 9),
    "english_learner.call_marta": (
        3, "Good question, Marta! You borrow from someone and lend to someone.",
        "Good question! You borrow from someone and lend to someone. Martha lent me a pen."),
    "english_learner.bold_phrase": (
        3, "**Borrow** means take for a while; **lend** means give for a while.",
        "Borrow means take for a while; lend means give for a while."),
    # ------------------------------------------------------------ meeting_notes
    "meeting_notes.action_items_end": (
        0, "## Decisions\n- launch on 14/05\n\n## Action items\n- Tom: fix the login bug by Friday",
        "## Action items\n- Tom: fix the login bug by Friday\n\n## Decisions\n- launch on 14/05"),
    "meeting_notes.dd_mm": (
        1, "- final interviews on 03/06\n- offer out before 10/06",
        "- final interviews on 3 June\n- offer out before June 10"),
    "meeting_notes.bullets_only": (
        2, "**Office move**\n- move on 21 August\n- hot-desking on Fridays",
        "The office move is confirmed for 21 August, and with 45 desks for 52 people we will hot-desk on Fridays."),
    "meeting_notes.no_filler": (
        0, "- launch slips to 14 May (3 QA blockers)\n- Tom fixes login bug by Friday",
        "The meeting began with Priya's update: launch slips to 14 May."),
    "meeting_notes.not_longer": (
        0, "- Launch: 14 May (3 blockers)\n- Tom: login bug, Friday\n- Budget: 40k\n- Next sync: Tuesday",
        "Priya reported that the launch will slip to 14 May because the quality assurance team found three "
        "blocking issues. Tom will fix the login bug by Friday. The budget stays the same at 40k, and the team "
        "will meet again for the next sync on Tuesday."),
    "meeting_notes.every_figure": (
        2, "- move on 21 August, keys on 19 August\n- 45 desks for 52 people: hot-desking on Fridays",
        "- move on 21 August\n- fewer desks than people: hot-desking on Fridays"),
    # ------------------------------------------------------------ analyst_code
    "analyst_code.code_first": (
        3, "```python\ndef is_palindrome(s):\n    return s == s[::-1]\n```\nIt compares the string with its reverse.",
        "Here you go:\n```python\ndef is_palindrome(s):\n    return s == s[::-1]\n```"),
    "analyst_code.one_block": (
        3, "```python\ndef is_palindrome(s):\n    return s == s[::-1]\n```",
        "```python\ndef is_palindrome(s):\n    return s == s[::-1]\n```\nUse it:\n"
        "```python\nis_palindrome('aba')\n```"),
    "analyst_code.no_comments": (
        3, "```python\ndef is_palindrome(s):\n    return s == s[::-1]\n```",
        "```python\ndef is_palindrome(s):\n    # compare with the reverse\n    return s == s[::-1]\n```"),
    "analyst_code.short_after": (
        3, "```python\ndef is_palindrome(s):\n    return s == s[::-1]\n```\nIt compares the string with its reverse.",
        "```python\ndef is_palindrome(s):\n    return s == s[::-1]\n```\nIt compares the string with its reverse. "
        "Slicing with a step of -1 reverses it. Case still matters here. Spaces count too."),
    "analyst_code.no_pip": (
        2, "```python\nfrom collections import Counter\nprint(Counter(open('f.txt').read().split()))\n```",
        "First run `pip install nltk`, then tokenize the file."),
    "analyst_code.stdlib_only": (
        0, "```python\nimport csv\nrows = [r for r in csv.reader(open('f.csv')) if all(r)]\n```",
        "```python\nimport pandas as pd\ndf = pd.read_csv('f.csv').dropna()\n```"),
    "analyst_code.lang_tag": (
        1, "```sql\nSELECT c.name, SUM(o.amount) AS total FROM customers c JOIN orders o ON o.customer_id = c.id "
           "GROUP BY c.name ORDER BY total DESC LIMIT 5;\n```",
        "```\nSELECT c.name, SUM(o.amount) AS total FROM customers c JOIN orders o ON o.customer_id = c.id "
        "GROUP BY c.name ORDER BY total DESC LIMIT 5;\n```"),
}


def test_counts_and_split():
    pairs = people.all_wishes()
    assert len(people.KINDS) >= 12
    assert len(pairs) >= 80 and len({w.id for _, w in pairs}) == len(pairs) == len({w.text for _, w in pairs})
    for k in people.KINDS:
        assert 3 <= len(k.requests) <= 5 and 6 <= len(k.wishes) <= 8, k.id
        assert all(w.id.startswith(k.id + ".") for w in k.wishes)
        splits = collections.Counter(people.split_of(w.id) for w in k.wishes)
        assert splits["dev"] >= 2 and splits["test"] >= 2, (k.id, splits)  # every kind in both splits
    assert collections.Counter(people.split_of(w.id) for _, w in pairs) == {"dev": 50, "test": 50}  # as documented
    assert people.split_of("work_email.sign_sam") == people.split_of("work_email.sign_sam")


def test_every_wish_has_a_check_and_examples():
    ids = {w.id for _, w in people.all_wishes()}
    assert ids == set(checks.CHECKS) == set(EXAMPLES)


@pytest.mark.parametrize("wish_id", sorted(EXAMPLES))
def test_check_on_met_and_unmet_replies(wish_id):
    index, good, bad = EXAMPLES[wish_id]
    request = people.kind(wish_id.split(".")[0]).requests[index]
    assert met(wish_id, request, good) is True, good
    assert met(wish_id, request, bad) is False, bad
    assert met(wish_id, request, "   ") is False  # an empty reply meets no wish


def test_facts_read_off_every_request():
    """The checks that read the request find what they need in every request of their kind."""
    for request in people.kind("support_agent").requests:
        assert checks.customer_first_name(request) and "#" in request
    assert [checks.company(r) for r in people.kind("cover_letter").requests] == [
        "Northwind Logistics", "Bean There Cafe", "Lumio"]
    assert [checks.kids(r) for r in people.kind("parent").requests] == [["Leo", "Mia"], ["Ava"], ["Theo"],
                                                                        ["Leo", "Mia"]]
    assert all(checks.asked_phrases(r) for r in people.kind("english_learner").requests)
    for name in ("summaries", "meeting_notes", "product_copy"):
        assert all(checks.numbers(checks.pasted(r)) for r in people.kind(name).requests), name


def test_helpers():
    assert checks.mostly("La frase significa que es muy fácil, y se usa cuando hay un problema.", "es")
    assert not checks.mostly("The phrase means that it is easy, and you use it when there is a problem.", "es")
    assert checks.mostly("Le conseil a voté pour des pistes et les travaux sont prévus pour avril.", "fr")
    assert checks.sentences("Summary:\nThe council voted. Work starts in April.") == 2
    assert checks.keeps_numbers("7 to 2, 1,200 people", "seven to two, 1200 people")
    assert not checks.keeps_numbers("7 to 2, 1,200 people", "seven to two, many people")
    assert checks.bare("- **Leftovers:** keep it cold") == "Leftovers: keep it cold"
    assert checks.blocks("a\n```py\nx = 1\n```\nb") == [("py", "x = 1")]
    # borderline wordings the checks settle on purpose
    assert met("home_cook.no_oven", "", "Add the baking soda and fry.")  # an ingredient, not baking
    assert not met("home_cook.vegetarian", "", "Use chicken stock.")
    assert met("home_cook.vegetarian", "", "Add two meat-free sausages and the chickpeas.")
    assert met("traveller.times_of_day", "", "Day 1\nMorning: A\nAfternoon: B\nEvening: C\nDay 2\nMorning: D")\
        is False  # day 2 has no afternoon or evening
    assert met("study_notes.no_years", "", "The heart pumps about 7,200 litres and 1500 ml at rest.")
    assert not met("meeting_notes.dd_mm", "", "- launch on 05/14")  # month/day, not day/month
    assert not met("support_agent.i_not_we", "", "I will ask them to contact us.")
    assert met("support_agent.no_links", "", "I can also be reached at help@brightline.com.")
    assert met("traveller.km", "", "Walk the Royal Mile, about 1.6 km.")  # a street, not a unit
    cafe = people.kind("cover_letter").requests[1]
    assert met("cover_letter.company_twice", cafe, "I love Bean There Café. Bean There Café is my local.")
    assert met("parent.no_screens", "", "A screen-free afternoon: build a fort.")
    assert met("code_review.verdict_first", "", "Verdict: NEEDS WORK\n\nline 6 fails on [].")
    assert not met("home_cook.time_first_line", "", "Prep time: 10 min | Cook time: 15 min")
    assert met("home_cook.serves_four", "", "This makes enough for four.")
    assert not met("home_cook.serves_four", "", "Simmer for 4 minutes.")
    assert met("meeting_notes.dd_mm", "", "- launch on 14/05/2026")
    assert met("meeting_notes.action_items_end", "", "Notes\n\nAction items\n| Who | What |\n|---|---|\n| Tom | bug |")
    assert not met("meeting_notes.action_items_end", "", "Action items:\n- Tom: bug\nLet me know if you need more.")
    assert met("fitness.seconds", "", "A 30-second plank.")
    assert not met("study_notes.quiz_end", "", "Quiz\n1. Chambers? (four)\n2. Valves?\n3. Lungs?\nAnswers: 4")
    assert met("english_learner.spanish", "", "Significa empezar una conversación con alguien que no conoces.")
    text = people.kind("summaries").requests[0]  # ten words in a row, but across two sentences: not a copy
    assert met("summaries.own_words", text, "- Lanes on Harbour Road and Mill Street.\n- Work starts in April and "
                                            "lasts 18 months.")
    assert not met("summaries.own_words", text, "Shop owners on Mill Street worried about losing 40 parking spaces.")
    letter = "Dear Lumio team,\n\nI spent 3 years on the phones.\n\nSincerely,\nAlex Moreno\nalex@mail.example"
    assert met("cover_letter.sign_full_name", "", letter + "\n\nGood luck with your application!")
    assert not met("cover_letter.sign_full_name", "", "Alex Moreno\nDear Lumio team,\n\nHi.\n\nSincerely,\n[Name]")
    assert met("support_agent.greet_first_name", people.kind("support_agent").requests[0], "Hello, Dana. A new mug.")
    notes = people.kind("meeting_notes").requests[0]
    assert met("meeting_notes.every_figure", notes, "14/05: launch, 3 blockers, budget 40,000, Tom on Friday")
    assert met("home_cook.metric", "", "- 80 g oats\n- 250 ml milk\nServe with a cup of tea.")


def test_generate_end_to_end_on_tiny_random(tmp_path, capsys):
    from tests.scripts import load_script

    generate = load_script("benchmarks/wish_bench/generate.py")
    replies, items_path = tmp_path / "replies.jsonl", tmp_path / "items.jsonl"
    args = ["--model", "tiny-random", "--kinds", "meeting_notes", "--plain", "1", "--prompted", "0",
            "--max-tokens", "24", "--replies", str(replies), "--items", str(items_path)]
    assert generate.main(args) == 0
    kind = people.kind("meeting_notes")
    rows = [json.loads(line) for line in replies.read_text().splitlines()]
    assert len(rows) == len(kind.requests)  # one reply per request
    items = [json.loads(line) for line in items_path.read_text().splitlines()]
    assert len(items) == len(kind.requests) * len(kind.wishes)  # a plain reply against every wish
    fields = {"kind", "request", "reply", "wish", "wish_id", "split", "met", "model", "seed"}
    for item in items:
        assert fields <= set(item) and item["model"] == "tiny-random" and item["kind"] == "meeting_notes"
        assert item["split"] == people.split_of(item["wish_id"])
        assert item["met"] == met(item["wish_id"], item["request"], item["reply"])
    assert "wrote 18 items" in capsys.readouterr().out

    assert generate.main(args) == 0  # resumes: nothing left to write
    assert "all 3 replies already" in capsys.readouterr().out
    assert len(replies.read_text().splitlines()) == len(kind.requests)

    with replies.open("a") as handle:  # an interrupted append leaves half a line: skipped, written again
        handle.write('{"key": "cut')
    prompted = [*args[:5], "0", "--prompted", "1", *args[8:]]  # one reply per (request, wish), the wish prompted
    assert generate.main(prompted) == 0
    items = [json.loads(line) for line in items_path.read_text().splitlines()]
    with_wish = [i for i in items if i["prompted"]]
    assert len(with_wish) == len(kind.requests) * len(kind.wishes)  # each labelled against its own wish only
    assert len(items) == 2 * len(kind.requests) * len(kind.wishes)
    assert "to write" in capsys.readouterr().out
