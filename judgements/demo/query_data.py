"""Demo queries (a data module): (text shoppers type, need written for raters, hidden intent).

The intent spec maps `catalogue.Intent` field names to space-separated product kinds or
tags (see `product_lines.py`).  Raters only ever see the text and the description, so the
description must say in words what the intent encodes.  Some texts are misspelt or vague on
purpose: that is what real search logs look like, and it makes the rankers differ.
"""

from __future__ import annotations

QUERIES: tuple[tuple[str, str, dict[str, str]], ...] = (
    (
        "2 person backpacking tent",
        "The searcher wants a tent for two people light enough to carry on multi-day hikes. "
        "Heavy car-camping tents and tents for other group sizes are at most partially "
        "relevant; a footprint for a two-person tent is partially relevant.",
        {
            "kinds": "tent",
            "must": "2p backpacking",
            "nice": "ultralight freestanding",
            "avoid": "car-camping",
            "related": "footprint",
        },
    ),
    (
        "ultralight tent 1 person",
        "A solo hiker wants the lightest one-person shelter they can get. Light two-person "
        "tents are partially relevant; a bivy sack counts if it is very light.",
        {"kinds": "tent bivy", "must": "1p ultralight", "nice": "trekking-pole"},
    ),
    (
        "family tent 6 person",
        "A family wants a roomy six-person tent for the campground. Instant (pop-up) tents "
        "are ideal; tents of another size are partially relevant, backpacking tents are not.",
        {"kinds": "tent", "must": "6p car-camping", "nice": "instant", "reject": "backpacking"},
    ),
    (
        "4 season tent",
        "Wants a tent that survives winter storms and snow loads. Three-season tents are not "
        "relevant, however good they are.",
        {"kinds": "tent", "hard": "4-season", "nice": "2p"},
    ),
    (
        "tent stakes aluminum",
        "Wants replacement aluminium tent stakes. Stakes of other metals are partially "
        "relevant; tents that happen to include stakes are not relevant.",
        {"kinds": "stakes", "must": "aluminum", "nice": "y-stake"},
    ),
    (
        "footprint for 2 person tent",
        "Wants a groundsheet (footprint) that fits a two-person tent. Footprints for bigger "
        "tents are partially relevant; tents themselves are not relevant.",
        {"kinds": "footprint", "must": "2p"},
    ),
    (
        "ultralight sleeping bag 0 degrees",
        "Wants a lightweight sleeping bag warm enough for nights around 0°F (-18°C). Heavy "
        "winter bags, or light bags rated for milder nights, are only partially relevant.",
        {"kinds": "sleeping-bag quilt", "must": "rated-0f ultralight", "nice": "down"},
    ),
    (
        "sleeping bag for kids",
        "A parent wants a child-sized sleeping bag. Adult bags are not relevant.",
        {"kinds": "sleeping-bag", "hard": "kids"},
    ),
    (
        "sleping bag summer",
        "Wants a light sleeping bag for warm summer nights (rated around 40°F / 5°C or "
        "warmer). Three-season bags are partially relevant; winter bags are not relevant.",
        {
            "kinds": "sleeping-bag quilt",
            "must": "summer",
            "nice": "ultralight",
            "reject": "winter",
        },
    ),
    (
        "down quilt",
        "Wants a down-filled backpacking quilt rather than a zipped bag. Down mummy bags are "
        "partially relevant; synthetic bags are not relevant.",
        {"kinds": "quilt", "must": "down", "nice": "ultralight", "related": "sleeping-bag"},
    ),
    (
        "insulated sleeping pad r value 4",
        "Wants a sleeping pad with an R-value of at least 4 for cold nights. Pads with a lower "
        "R-value are partially relevant.",
        {"kinds": "sleeping-pad", "must": "r4", "nice": "ultralight"},
    ),
    (
        "foam sleeping pad",
        "Wants a closed-cell foam pad that can never puncture. Inflatable and self-inflating "
        "pads are partially relevant.",
        {"kinds": "sleeping-pad", "must": "foam"},
    ),
    (
        "hiking backpack 65l",
        "Wants a large backpack (roughly 60-70 litres) for multi-day backpacking trips. "
        "Smaller packs are partially relevant; daypacks and travel packs are not relevant.",
        {"kinds": "backpack", "must": "large", "nice": "65l", "reject": "daypack travel kids"},
    ),
    (
        "daypack with hydration sleeve",
        "Wants a day hiking pack that holds a water reservoir. Daypacks without a sleeve and "
        "a reservoir on its own are partially relevant.",
        {"kinds": "backpack", "must": "daypack hydration", "related": "reservoir"},
    ),
    (
        "womens backpacking pack",
        "Wants a multi-day backpacking pack with a women's-specific fit. Unisex packs and "
        "women's daypacks are partially relevant; men's packs are not relevant.",
        {"kinds": "backpack", "must": "women multiday", "reject": "men"},
    ),
    (
        "backpacking stove",
        "Wants a small stove to carry on hiking trips. Canister stoves are the usual choice; "
        "car-camping stoves are not relevant.",
        {"kinds": "stove", "must": "backpacking", "nice": "canister", "reject": "car-camping"},
    ),
    (
        "stove for winter camping",
        "Wants a stove that keeps working in freezing temperatures, e.g. a liquid-fuel stove "
        "or a remote canister stove with a preheat tube. Ordinary canister stoves are only "
        "partially relevant, as is cold-weather fuel.",
        {
            "kinds": "stove",
            "must": "cold-weather",
            "nice": "liquid-fuel",
            "reject": "car-camping",
            "related": "fuel",
        },
    ),
    (
        "two burner camp stove",
        "Wants a two-burner stove for cooking at the campsite. Single-burner backpacking "
        "stoves are partially relevant.",
        {"kinds": "stove", "must": "two-burner"},
    ),
    (
        "titanium pot",
        "Wants a titanium cooking pot for backpacking. Pots of other materials and titanium "
        "mugs are partially relevant.",
        {"kinds": "pot", "must": "titanium", "nice": "ultralight", "related": "mug"},
    ),
    (
        "camping cookware set for 4",
        "Wants a cookware set big enough to cook for four people. Sets for two are partially "
        "relevant; single pots are not relevant.",
        {"kinds": "cook-set", "must": "group"},
    ),
    (
        "headlamp rechargeable",
        "Wants a headlamp with a built-in rechargeable battery; USB-C charging is a plus. "
        "Headlamps that only take AAA batteries are partially relevant.",
        {"kinds": "headlamp", "must": "rechargeable", "nice": "usb-c"},
    ),
    (
        "hedlamp for running",
        "Wants a headlamp made for running: light, bounce-free and bright. General-purpose "
        "headlamps are partially relevant; running shoes are not relevant.",
        {"kinds": "headlamp", "must": "running", "nice": "rechargeable"},
    ),
    (
        "red light headlamp",
        "Wants a headlamp with a red night-vision mode. Headlamps without one are partially "
        "relevant.",
        {"kinds": "headlamp", "must": "red-light", "nice": "rechargeable"},
    ),
    (
        "waterproof hiking boots women",
        "Wants waterproof hiking boots in women's sizes; mid-height is ideal. Men's boots, "
        "non-waterproof boots and snow boots are at most partially relevant.",
        {"kinds": "boot", "must": "waterproof women hiking", "nice": "mid", "avoid": "snow"},
    ),
    (
        "mens trail running shoes",
        "Wants men's trail running shoes. Women's trail runners and other men's trail shoes "
        "are partially relevant; boots are not relevant.",
        {"kinds": "trail-shoe", "must": "trail-runner men", "nice": "wide"},
    ),
    (
        "rain jacket men",
        "Wants a fully waterproof rain jacket in a men's fit. Women's rain jackets and "
        "water-resistant (not waterproof) men's jackets are partially relevant, as are rain "
        "pants.",
        {"kinds": "jacket", "must": "rain men", "related": "pants"},
    ),
    (
        "insulated jacket down women",
        "Wants a warm insulated jacket for women, preferably down-filled. Synthetic women's "
        "jackets are relevant; men's insulated jackets are partially relevant.",
        {"kinds": "jacket", "must": "insulated women", "nice": "down"},
    ),
    (
        "softshell",
        "Vague query: the shopper probably wants a softshell jacket. Other jackets are at most "
        "partially relevant.",
        {"kinds": "jacket", "must": "softshell"},
    ),
    (
        "water filter squeeze",
        "Wants a squeeze-style water filter. Other portable filters are partially relevant.",
        {"kinds": "water-filter", "must": "squeeze"},
    ),
    (
        "water purifier virus",
        "Wants water treatment that also removes viruses (purifier, UV or tablets), e.g. for "
        "international travel. Ordinary filters do not stop viruses and are not relevant.",
        {"kinds": "water-purifier", "must": "virus"},
    ),
    (
        "gravity filter for groups",
        "Wants a gravity-fed water filter that serves a group. Other filters and spare "
        "gravity cartridges are partially relevant.",
        {"kinds": "water-filter", "must": "gravity", "nice": "group", "related": "filter-part"},
    ),
    (
        "trekking poles carbon",
        "Wants carbon-fibre trekking poles; folding ones are ideal. Aluminium poles are "
        "partially relevant, spare tips are not relevant.",
        {"kinds": "trekking-pole", "must": "carbon", "nice": "folding"},
    ),
    (
        "collapsible trekking poles women",
        "Wants compact folding trekking poles sized for women. Unisex folding poles and "
        "women's telescoping poles are partially relevant.",
        {"kinds": "trekking-pole", "must": "folding women"},
    ),
    (
        "camp chair lightweight",
        "Wants a camp chair light enough to take backpacking. Heavy campsite chairs are "
        "partially relevant.",
        {"kinds": "chair", "must": "ultralight"},
    ),
    (
        "dry bag 20l",
        "Wants a roll-top dry bag of about 20 litres. Other sizes and compression sacks of "
        "that volume are partially relevant.",
        {"kinds": "dry-bag", "must": "20l", "related": "stuff-sack"},
    ),
    (
        "lantern",
        "Vague query: wants a camping lantern; a rechargeable one would be perfect. "
        "Headlamps are not relevant.",
        {"kinds": "lantern", "nice": "rechargeable"},
    ),
    (
        "merino base layer women",
        "Wants a women's merino wool base layer top. Men's merino tops and synthetic women's "
        "base layers are partially relevant, as are merino socks.",
        {"kinds": "base-layer", "must": "merino women", "related": "socks"},
    ),
    (
        "first aid kit ultralight",
        "Wants a small, light first aid kit for hiking. Big car-camping kits are partially "
        "relevant.",
        {"kinds": "first-aid", "must": "ultralight"},
    ),
    (
        "power bank for camping",
        "Wants a portable battery to charge phones and lights while camping. A solar panel "
        "is partially relevant.",
        {"kinds": "power-bank", "related": "solar-panel"},
    ),
    (
        "something to keep mosquitoes away",
        "Vague query: wants protection against mosquitoes, such as a head net or repellent. "
        "Tents and clothing are not relevant.",
        {"kinds": "insect"},
    ),
    (
        "pocket knife",
        "Wants a folding pocket knife. A multi-tool with a blade is partially relevant.",
        {"kinds": "knife", "related": "multitool"},
    ),
    (
        "cooking gear for backpacking",
        "Vague query: wants something to cook with on a backpacking trip (a stove, pot or "
        "small cook set). Car-camping cookware is not relevant.",
        {
            "kinds": "stove pot cook-set",
            "must": "backpacking",
            "nice": "ultralight",
            "reject": "car-camping",
        },
    ),
    (
        "winter sleeping bag -20",
        "Wants a sleeping bag for very cold nights, around -20°F. Bags rated to about 0°F "
        "are relevant; three-season bags are not relevant.",
        {"kinds": "sleeping-bag", "hard": "rated-0f", "nice": "expedition"},
    ),
)
