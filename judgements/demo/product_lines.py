"""Hand-written product lines for the demo outdoor shop (a data module).

Each `Line` is one product design sold by one or more brands, optionally in several variants
(capacity, temperature rating, gender, size).  `catalogue.py` expands every line into one
document per (maker, variant), which gives the catalogue realistic near-duplicates: the same
kind of tent from three brands at three prices, a men's and a women's version of a boot.

`kind` and `tags` are hidden facts used only by the simulated relevance oracle in
`raters.py`; shoppers and raters see the title, snippet and fields.  Templates may use
`{brand}`, `{model}`, `{kg}` (packed weight in kilograms) and any key of the variant dict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Variant = dict[str, Any]


@dataclass(frozen=True)
class Line:
    """One product design; expanded into documents by `catalogue.build_products`."""

    category: str
    kind: str
    title: str
    makers: tuple[tuple[str, str], ...]
    snippets: tuple[str, ...]
    price: float
    weight_g: int
    tags: str = ""
    colours: tuple[str, ...] = ("Grey",)
    variants: tuple[Variant, ...] = ({},)
    fields: dict[str, str] = field(default_factory=dict)


def line(
    category: str,
    kind: str,
    title: str,
    makers: str,
    snippets: tuple[str, ...] | str,
    *,
    price: float,
    weight_g: int,
    **options: Any,
) -> Line:
    """Build a Line from compact literals: makers are "Brand/Model; Brand/Model"."""
    split = (maker.split("/", 1) for maker in makers.split(";"))
    pairs = tuple((brand.strip(), model.strip()) for brand, model in split)
    if isinstance(snippets, str):
        snippets = (snippets,)
    for key in ("colours", "variants"):
        if key in options:
            options[key] = tuple(options[key])
    return Line(category, kind, title, pairs, snippets, price, weight_g, **options)


# The catalogue below is a table, laid out by hand to be read one product line at a time;
# the formatter would put every argument on its own line and quadruple its length.
# fmt: off
MEN_WOMEN: tuple[Variant, ...] = (
    {"gender": "Men's", "tags": "men"},
    {"gender": "Women's", "tags": "women", "weight_pct": -12},
)

EARTH = ("Olive", "Sand", "Slate Grey")
BRIGHT = ("Orange", "Blue", "Yellow", "Red")
DARK = ("Black", "Charcoal", "Navy")

TENTS = [
    line(
        "Tents", "tent", "{brand} {model} {n} Ultralight Backpacking Tent",
        "Ridgeline/Featherlite; Kestrel/Wisp; Trailwise/Skyline",
        (
            "A {n}-person semi-freestanding tent for long trails: a single hubbed aluminium "
            "pole, two doors and a packed weight of only {kg} kg.",
            "Our lightest double-wall {n}-person shelter, with a silicone-coated ripstop fly "
            "and mesh inner. Packs down to the size of a water bottle.",
        ),
        price=329, weight_g=880, colours=("Green", "Yellow"),
        tags="backpacking ultralight 3-season semi-freestanding {n}p",
        variants=[
            {"n": 1},
            {"n": 2, "price": 50, "weight_g": 210},
            {"n": 3, "price": 120, "weight_g": 520},
        ],
        fields={"capacity": "{n} person", "seasons": "3-season"},
    ),
    line(
        "Tents", "tent", "{brand} {model} {n} Backpacking Tent",
        "Northhollow/Trailhome; Alpenglow/Meadow; Basecamp Basics/Trail",
        (
            "Fully freestanding {n}-person dome with two vestibules, colour-coded clips and "
            "a full-coverage rain fly. A dependable pick for weekend backpacking.",
            "Sturdy {n}-person three-season tent that pitches in minutes. Packed weight "
            "{kg} kg, with aluminium stakes and a stuff sack included.",
        ),
        price=229, weight_g=1850, colours=("Green", "Orange"),
        tags="backpacking 3-season freestanding {n}p",
        variants=[
            {"n": 1, "price": -40, "weight_g": -350},
            {"n": 2},
            {"n": 3, "price": 50, "weight_g": 450},
        ],
        fields={"capacity": "{n} person", "seasons": "3-season"},
    ),
    line(
        "Tents", "tent", "{brand} {model} {n} Family Dome Tent",
        "Basecamp Basics/Big Sky; Cairnfield/Homestead; Granite Peak/Lodge",
        (
            "Roomy {n}-person car camping tent with near-vertical walls, a room divider and "
            "an electrical cord port. Too heavy to carry far, perfect at the campground.",
            "A spacious family tent for {n} people: tall enough to stand up in, with large "
            "windows, a porch awning and storage pockets.",
        ),
        price=179, weight_g=6800, colours=("Blue", "Green"),
        tags="car-camping family {n}p",
        variants=[
            {"n": 4},
            {"n": 6, "price": 70, "weight_g": 2300},
            {"n": 8, "price": 150, "weight_g": 5400},
        ],
        fields={"capacity": "{n} person", "seasons": "3-season"},
    ),
    line(
        "Tents", "tent", "{brand} {model} {n} Instant Cabin Tent",
        "Summit Supply/QuickPitch; Basecamp Basics/Pop-Up",
        "Pre-attached poles let this {n}-person cabin tent go up in about a minute. "
        "Built for campgrounds and festivals rather than trails.",
        price=199, weight_g=9200, colours=("Grey", "Green"),
        tags="car-camping family instant {n}p",
        variants=[{"n": 4}, {"n": 6, "price": 60, "weight_g": 2100}],
        fields={"capacity": "{n} person", "seasons": "3-season"},
    ),
    line(
        "Tents", "tent", "{brand} {model} {n} Four-Season Tent",
        "Fjellvik/Storm; Ridgeline/Summit",
        (
            "A {n}-person four-season mountaineering tent with a low profile, snow flaps and "
            "four crossing poles that shrug off high winds.",
            "Expedition-grade {n}-person tent for winter camping and alpine routes, with "
            "guy-out points everywhere and a vestibule big enough for boots and a stove.",
        ),
        price=649, weight_g=2900, colours=("Orange", "Yellow"),
        tags="4-season winter mountaineering freestanding {n}p",
        variants=[{"n": 2}, {"n": 3, "price": 110, "weight_g": 600}],
        fields={"capacity": "{n} person", "seasons": "4-season"},
    ),
    line(
        "Tents", "tent", "{brand} {model} {n} Trekking Pole Shelter",
        "Kestrel/Arrow; Trailwise/Solo",
        "Non-freestanding {n}-person shelter pitched with your trekking poles, saving the "
        "weight of tent poles. Packed weight {kg} kg.",
        price=289, weight_g=620, colours=("Grey", "Olive"),
        tags="backpacking ultralight trekking-pole 3-season {n}p",
        variants=[{"n": 1}, {"n": 2, "price": 60, "weight_g": 200}],
        fields={"capacity": "{n} person", "seasons": "3-season"},
    ),
    line(
        "Tents", "shade", "{brand} {model} Beach Sun Shelter",
        "Bluewater/Shade Dome; Basecamp Basics/Sunny",
        "A pop-up shade tent with UPF 50 fabric and sand pockets for a day at the beach. "
        "Not intended for overnight use.",
        price=59, weight_g=1900, colours=("Blue", "Turquoise"),
        tags="beach 2p",
        fields={"capacity": "2 person"},
    ),
    line(
        "Tents", "bivy", "{brand} {model} Alpine Bivy Sack",
        "Fjellvik/Vardo",
        "Waterproof-breathable one-person bivy for emergency nights and minimalist alpine "
        "trips. Fits over a sleeping bag and pad.",
        price=219, weight_g=480, colours=("Olive",),
        tags="ultralight 1p waterproof",
        fields={"capacity": "1 person"},
    ),
]

TENT_ACCESSORIES = [
    line(
        "Tent accessories", "stakes", "{brand} {model} Aluminium Tent Stakes ({pack}-Pack)",
        "Ridgeline/Y-Beam; Trailwise/Tri-Peg",
        "Y-section 7075 aluminium stakes that hold in hard and loose ground alike. "
        "Each stake has a reflective pull cord.",
        price=24, weight_g=90, colours=("Red", "Gold"),
        tags="aluminum y-stake",
        variants=[{"pack": 6}, {"pack": 8, "price": 7, "weight_g": 30}],
        fields={"material": "7075 aluminium"},
    ),
    line(
        "Tent accessories", "stakes", "{brand} {model} Aluminum Y-Stakes (6-Pack)",
        "Basecamp Basics/Trail",
        "Lightweight aluminum Y-stakes, a cheap upgrade over the round pins that come with "
        "most tents.",
        price=16, weight_g=105, colours=("Silver",), tags="aluminum y-stake",
        fields={"material": "aluminum"},
    ),
    line(
        "Tent accessories", "stakes", "{brand} {model} Steel Tent Pegs (10-Pack)",
        "Basecamp Basics/Campground; Granite Peak/Rock Peg",
        "Heavy galvanised steel pegs for car camping and rocky ground; hammer them in "
        "without bending.",
        price=14, weight_g=480, colours=("Silver",), tags="steel",
        fields={"material": "steel"},
    ),
    line(
        "Tent accessories", "stakes", "{brand} {model} Titanium Shepherd Hook Stakes (6-Pack)",
        "Kestrel/Ti Hook",
        "Grade 5 titanium hooks at 6 g each: the lightest way to pitch in firm soil.",
        price=29, weight_g=36, colours=("Titanium",), tags="titanium ultralight",
        fields={"material": "titanium"},
    ),
    line(
        "Tent accessories", "footprint", "{brand} {model} {n} Tent Footprint",
        "Ridgeline/Featherlite; Northhollow/Trailhome",
        "A custom-fit groundsheet that protects the floor of the {model} {n} from abrasion "
        "and lets you pitch the fly on its own.",
        price=49, weight_g=150, colours=("Grey",),
        tags="{n}p",
        variants=[{"n": 2}, {"n": 3, "price": 10, "weight_g": 40}],
        fields={"capacity": "{n} person"},
    ),
    line(
        "Tent accessories", "tarp", "{brand} {model} Silnylon Tarp {size}",
        "Kestrel/Canopy",
        "A catenary-cut silnylon tarp with eight tie-outs, for rain cover over a hammock "
        "or a minimalist shelter.",
        price=119, weight_g=340, colours=("Olive",), tags="ultralight",
        variants=[{"size": "2.5 x 3 m"}, {"size": "3 x 3.5 m", "price": 30, "weight_g": 110}],
    ),
    line(
        "Tent accessories", "mallet", "{brand} {model} Camp Mallet",
        "Basecamp Basics/Campground",
        "A rubber-headed mallet with a stake-pulling hook for car camping.",
        price=12, weight_g=500, colours=("Black",), tags="car-camping",
    ),
    line(
        "Tent accessories", "guyline", "{brand} {model} Reflective Guyline Kit",
        "Trailwise/Glint",
        "Twenty metres of reflective 2 mm cord with line-lock tensioners, so you stop "
        "tripping over guylines at night.",
        price=15, weight_g=60, colours=("Orange",), tags="ultralight",
    ),
    line(
        "Tent accessories", "repair", "{brand} {model} Tent Repair Kit",
        "Ridgeline/Field",
        "Pole splint, seam sealer, mesh and fabric patches in a zip pouch for fixing "
        "shelters on the trail.",
        price=19, weight_g=85, colours=("Red",),
    ),
]

SLEEP = [
    line(
        "Sleeping bags", "sleeping-bag", "{brand} {model} {temp}F Down Sleeping Bag",
        "Alpenglow/Nightjar; Fjellvik/Dun",
        (
            "A {temp}°F mummy bag filled with 850-fill responsibly sourced down, with a "
            "draft collar and a trapezoid footbox. Weighs {kg} kg.",
            "Warm, compressible down mummy rated to {temp}°F, with water-resistant "
            "shell fabric and a full-length zip.",
        ),
        price=429, weight_g=820, colours=("Red", "Blue"),
        tags="down mummy ultralight",
        variants=[
            {"temp": 0, "price": 120, "weight_g": 330, "tags": "rated-0f winter"},
            {"temp": 20, "tags": "3-season"},
            {"temp": 35, "price": -80, "weight_g": -220, "tags": "3-season"},
        ],
        fields={"temperature_rating": "{temp}°F", "insulation": "850-fill down"},
    ),
    line(
        "Sleeping bags", "sleeping-bag", "{brand} {model} 15F Women's Down Sleeping Bag",
        "Alpenglow/Nightjar",
        "A women's-specific 15°F down mummy with extra fill at the feet and torso; "
        "shorter and narrower than the standard Nightjar.",
        price=449, weight_g=880, colours=("Plum",),
        tags="down mummy ultralight 3-season women",
        fields={"temperature_rating": "15°F", "insulation": "850-fill down"},
    ),
    line(
        "Sleeping bags", "sleeping-bag", "{brand} {model} {temp}F Synthetic Sleeping Bag",
        "Northhollow/Basin; Basecamp Basics/Mummy",
        "Synthetic-fill mummy bag rated to {temp}°F that keeps insulating when damp. "
        "Heavier than down but easy to care for.",
        price=139, weight_g=1500, colours=("Green", "Navy"),
        tags="synthetic mummy 3-season",
        variants=[{"temp": 15, "price": 30, "weight_g": 300}, {"temp": 30}],
        fields={"temperature_rating": "{temp}°F", "insulation": "synthetic"},
    ),
    line(
        "Sleeping bags", "sleeping-bag", "{brand} {model} {temp}F Expedition Sleeping Bag",
        "Fjellvik/Polar; Granite Peak/Arctic",
        "Expedition bag rated to {temp}°F for polar trips and winter mountaineering, with a "
        "baffled hood and an internal stash pocket.",
        price=799, weight_g=2000, colours=("Orange",),
        tags="rated-0f winter expedition",
        variants=[{"temp": -20, "tags": "down"}, {"temp": -10, "price": -250, "tags": "down"}],
        fields={"temperature_rating": "{temp}°F", "insulation": "800-fill down"},
    ),
    line(
        "Sleeping bags", "quilt", "{brand} {model} {temp}F Down Quilt",
        "Kestrel/Drift; Trailwise/Hush",
        "An open-backed down quilt rated to {temp}°F that pairs with your sleeping pad "
        "and saves weight over a mummy bag.",
        price=299, weight_g=560, colours=("Black", "Forest Green"),
        tags="down ultralight quilt",
        variants=[{"temp": 20, "tags": "3-season"}, {"temp": 40, "price": -60,
                                                       "weight_g": -170, "tags": "summer"}],
        fields={"temperature_rating": "{temp}°F", "insulation": "850-fill down"},
    ),
    line(
        "Sleeping bags", "sleeping-bag", "{brand} {model} Rectangular Camping Sleeping Bag",
        "Basecamp Basics/Campground; Cairnfield/Cabin Double",
        "Roomy rectangular bag rated to 45°F that unzips flat into a blanket. Made for "
        "car camping and sleepovers, not for carrying.",
        price=59, weight_g=1900, colours=("Red Plaid", "Blue"),
        tags="car-camping summer synthetic",
        fields={"temperature_rating": "45°F", "insulation": "synthetic"},
    ),
    line(
        "Sleeping bags", "sleeping-bag", "{brand} {model} Kids Sleeping Bag",
        "Basecamp Basics/Cub; Northhollow/Junior",
        "A short mummy bag sized for children up to 150 cm, rated to 35°F, with a glow-in-"
        "the-dark zip pull.",
        price=49, weight_g=950, colours=("Green", "Pink"),
        tags="kids synthetic summer",
        fields={"temperature_rating": "35°F", "insulation": "synthetic"},
    ),
    line(
        "Sleeping bags", "sleeping-bag", "{brand} {model} 50F Summer Sleeping Bag",
        "Ridgeline/Breeze",
        "Featherweight 50°F bag for warm summer nights and hut trips; packs to the size of "
        "a grapefruit.",
        price=119, weight_g=540, colours=("Light Blue",),
        tags="summer ultralight synthetic",
        fields={"temperature_rating": "50°F", "insulation": "synthetic"},
    ),
    line(
        "Sleeping bags", "liner", "{brand} {model} Sleeping Bag Liner",
        "Summit Supply/Silk Travel; Fjellvik/Thermal",
        "A liner that keeps your sleeping bag clean and adds a few degrees of warmth; "
        "doubles as a sheet in hostels.",
        price=49, weight_g=160, colours=("Natural",),
    ),
    line(
        "Sleeping bags", "pillow", "{brand} {model} Camp Pillow",
        "Kestrel/Air; Cairnfield/Foam",
        "A contoured camp pillow that stays put on your pad. Packs small.",
        price=35, weight_g=90, colours=("Grey", "Blue"), tags="ultralight",
    ),
    line(
        "Sleeping pads", "sleeping-pad", "{brand} {model} Insulated Air Pad ({size})",
        "Alpenglow/Loft; Ridgeline/Thermo Air; Basecamp Basics/Warm Air",
        (
            "Insulated inflatable pad with an R-value of 4.2 for three-season backpacking; "
            "7 cm thick and quiet to sleep on.",
            "A warm, light inflatable mattress (R-value 4.2) with reflective layers inside. "
            "Includes a pump sack.",
        ),
        price=179, weight_g=460, colours=("Yellow", "Blue"),
        tags="inflatable insulated r4 ultralight backpacking",
        variants=[{"size": "Regular"}, {"size": "Long Wide", "price": 30, "weight_g": 170}],
        fields={"r_value": "4.2", "size": "{size}"},
    ),
    line(
        "Sleeping pads", "sleeping-pad", "{brand} {model} Winter Sleeping Pad",
        "Fjellvik/Polar Air",
        "A high-warmth inflatable pad with an R-value of 7.0 for sleeping on snow.",
        price=229, weight_g=680, colours=("Orange",),
        tags="inflatable insulated r4 winter backpacking",
        fields={"r_value": "7.0"},
    ),
    line(
        "Sleeping pads", "sleeping-pad", "{brand} {model} Junior Air Mat",
        "Basecamp Basics/Sprout",
        "A shorter inflatable mat sized for kids, with an R-value of 2.5.",
        price=39, weight_g=420, colours=("Blue",), tags="inflatable kids",
        fields={"r_value": "2.5"},
    ),
    line(
        "Sleeping pads", "sleeping-pad", "{brand} {model} Air Mat",
        "Basecamp Basics/Cloud; Trailwise/Float",
        "Uninsulated air mattress (R-value 1.1) for summer trips; comfortable but cold on "
        "chilly ground.",
        price=59, weight_g=520, colours=("Green",),
        tags="inflatable summer backpacking",
        fields={"r_value": "1.1"},
    ),
    line(
        "Sleeping pads", "sleeping-pad", "{brand} {model} Closed-Cell Foam Pad",
        "Ridgeline/Egg Crate; Basecamp Basics/Everyday; Kestrel/Z-Fold",
        "A closed-cell foam sleeping pad (R-value 2.0) that folds accordion style and can "
        "never puncture.",
        price=45, weight_g=410, colours=("Yellow", "Silver"),
        tags="foam backpacking",
        fields={"r_value": "2.0"},
    ),
    line(
        "Sleeping pads", "sleeping-pad", "{brand} {model} Self-Inflating Mat {cm} cm",
        "Cairnfield/Comfort; Northhollow/Rest",
        "Thick open-cell foam mat that inflates itself when you open the valve; R-value "
        "{r}. Best for car camping.",
        price=89, weight_g=1300, colours=("Navy", "Green"),
        tags="self-inflating car-camping",
        variants=[
            {"cm": 5, "r": "3.5"},
            {"cm": "7.5", "r": "4.5", "price": 30, "weight_g": 500, "tags": "insulated r4"},
        ],
        fields={"r_value": "{r}"},
    ),
]

PACKS = [
    line(
        "Backpacks", "backpack", "{brand} {model} {litres}L Backpacking Pack - {gender}",
        "Northhollow/Ascent; Granite Peak/Traverse; Alpenglow/Long Trail",
        (
            "A {litres}-litre internal-frame hiking pack for multi-day trips, with an "
            "adjustable torso, hip-belt pockets and a rain cover stored in the lid.",
            "Load-carrying {litres} L backpack with a ventilated back panel and a sleeping "
            "bag compartment. {gender} fit.",
        ),
        price=239, weight_g=1900, colours=("Blue", "Olive", "Black"),
        tags="multiday backpacking rain-cover {litres}l",
        variants=[
            {"litres": 65, "gender": "Men's", "tags": "men large"},
            {"litres": 60, "gender": "Women's", "tags": "women large", "weight_g": -150},
            {"litres": 50, "gender": "Men's", "tags": "men medium", "price": -30},
        ],
        fields={"volume": "{litres} L", "fit": "{gender}"},
    ),
    line(
        "Backpacks", "backpack", "{brand} {model} {litres}L Ultralight Frameless Pack",
        "Kestrel/Thru; Trailwise/Minimal",
        "A minimalist {litres} L pack in laminated fabric for thru-hikers carrying under "
        "9 kg; roll-top closure and stretch mesh pocket.",
        price=219, weight_g=560, colours=("White", "Black"),
        tags="ultralight backpacking multiday frameless {litres}l",
        variants=[{"litres": 40}, {"litres": 45, "price": 15, "weight_g": 60}],
        fields={"volume": "{litres} L"},
    ),
    line(
        "Backpacks", "backpack", "{brand} {model} {litres}L Daypack",
        "Ridgeline/Day; Summit Supply/Hike; Basecamp Basics/Everyday; Alpenglow/Ridge",
        (
            "A {litres} L daypack with a hydration sleeve, padded hip belt and side bottle "
            "pockets for long day hikes.",
            "Comfortable {litres} L hiking daypack with a mesh back and a sleeve for a 3 L "
            "water reservoir.",
        ),
        price=89, weight_g=720, colours=("Red", "Grey", "Teal"),
        tags="daypack hydration",
        variants=[{"litres": 22}, {"litres": 28, "price": 15, "weight_g": 120}],
        fields={"volume": "{litres} L"},
    ),
    line(
        "Backpacks", "backpack", "{brand} {model} 20 Women's Daypack",
        "Summit Supply/Hike",
        "Women-specific 20 L daypack with a shorter torso, contoured straps and a "
        "hydration sleeve.",
        price=95, weight_g=650, colours=("Plum",), tags="daypack hydration women",
        fields={"volume": "20 L", "fit": "Women's"},
    ),
    line(
        "Backpacks", "backpack", "{brand} {model} 15 Hydration Pack",
        "Bluewater/Hydro",
        "Slim running and biking pack that comes with a 2 L water bladder.",
        price=79, weight_g=480, colours=("Blue",), tags="daypack hydration running",
        fields={"volume": "15 L"},
    ),
    line(
        "Backpacks", "hip-pack", "{brand} {model} 5 L Hip Pack",
        "Ridgeline/Lumbar",
        "A hip pack with two bottle holsters for short hikes and dog walks.",
        price=45, weight_g=280, colours=("Black", "Teal"),
    ),
    line(
        "Backpacks", "backpack", "{brand} {model} 40 Travel Pack",
        "Cairnfield/Voyager",
        "Carry-on sized travel backpack with a clamshell opening and a laptop sleeve.",
        price=149, weight_g=1400, colours=("Black",), tags="travel",
        fields={"volume": "40 L"},
    ),
    line(
        "Backpacks", "backpack", "{brand} {model} 30 Kids Backpacking Pack",
        "Basecamp Basics/Scout",
        "An adjustable 30 L pack that grows with young hikers aged 8 to 14.",
        price=99, weight_g=1100, colours=("Green",), tags="kids backpacking",
        fields={"volume": "30 L"},
    ),
]

COOKING = [
    line(
        "Stoves", "stove", "{brand} {model} Canister Stove",
        "Emberwood/Flicker; Ridgeline/Micro; Basecamp Basics/Compact; Summit Supply/Jet",
        (
            "A tiny screw-on stove for isobutane canisters that boils a litre of water in "
            "about four minutes. Folds into its own case.",
            "Minimal upright canister stove for backpacking with serrated pot supports and a "
            "precise simmer valve.",
        ),
        price=49, weight_g=85, colours=("Silver",),
        tags="backpacking canister ultralight",
        fields={"fuel": "isobutane canister"},
    ),
    line(
        "Stoves", "stove", "{brand} {model} Canister Stove with Piezo Igniter",
        "Emberwood/Flicker Plus",
        "Our popular backpacking canister stove with a push-button piezo igniter, so no "
        "lighter is needed.",
        price=64, weight_g=95, colours=("Silver",),
        tags="backpacking canister ultralight piezo",
        fields={"fuel": "isobutane canister"},
    ),
    line(
        "Stoves", "stove", "{brand} {model} 1.0L Integrated Cooking System",
        "Emberwood/Boil; Alpenglow/Rapid",
        "Stove, heat-exchanger pot and insulating cozy in one unit: boils half a litre in "
        "100 seconds and sips fuel. Piezo ignition included.",
        price=139, weight_g=400, colours=("Orange", "Black"),
        tags="backpacking canister integrated piezo",
        fields={"fuel": "isobutane canister", "capacity": "1.0 L"},
    ),
    line(
        "Stoves", "stove", "{brand} {model} Multi-Fuel Expedition Stove",
        "Fjellvik/Whiteout; Emberwood/Altitude",
        "Burns white gas, kerosene or diesel and keeps full power in sub-zero temperatures. "
        "The stove of choice for winter camping and melting snow.",
        price=169, weight_g=390, colours=("Red",),
        tags="liquid-fuel cold-weather winter backpacking expedition",
        fields={"fuel": "white gas / kerosene / diesel"},
    ),
    line(
        "Stoves", "stove", "{brand} {model} Remote Canister Stove with Preheat Tube",
        "Ridgeline/Lowline",
        "A low, stable stove on a hose; run the canister inverted and the preheat tube keeps "
        "it burning in cold weather, down to around -15°C.",
        price=99, weight_g=210, colours=("Silver",),
        tags="canister cold-weather winter backpacking",
        fields={"fuel": "isobutane canister"},
    ),
    line(
        "Stoves", "stove", "{brand} {model} Two-Burner Propane Camp Stove",
        "Cairnfield/Tailgate; Basecamp Basics/Classic; Granite Peak/Grill Combo",
        (
            "Two 10,000 BTU burners with wind guards, fed by a standard 1 lb propane "
            "cylinder. Cook breakfast for the whole family at the campsite.",
            "A suitcase-style two-burner propane stove for car camping, with push-button "
            "ignition and a removable grease tray.",
        ),
        price=119, weight_g=5200, colours=("Green", "Black"),
        tags="two-burner propane car-camping",
        fields={"fuel": "propane"},
    ),
    line(
        "Stoves", "stove", "{brand} {model} Wood-Burning Backpacking Stove",
        "Trailwise/Twig; Kestrel/Ti Firebox",
        "Flat-pack stove that burns twigs and pine cones, so you never carry fuel. "
        "Doubles as a windscreen for an alcohol burner.",
        price=59, weight_g=260, colours=("Steel",),
        tags="wood backpacking ultralight",
        fields={"fuel": "wood"},
    ),
    line(
        "Stoves", "stove", "{brand} {model} Alcohol Stove",
        "Trailwise/Spirit",
        "A brass alcohol burner with a simmer ring: silent, simple and beloved by "
        "ultralight hikers.",
        price=25, weight_g=110, colours=("Brass",),
        tags="alcohol backpacking ultralight",
        fields={"fuel": "denatured alcohol"},
    ),
    line(
        "Stove fuel", "fuel", "{brand} {model} Isobutane Fuel Canister {g} g",
        "Emberwood/Four Season",
        "An isobutane-propane blend that keeps pressure in cold weather. Fits all threaded "
        "canister stoves.",
        price=7, weight_g=360, colours=("Blue",), tags="canister cold-weather",
        variants=[
            {"g": 110, "price": -2, "weight_g": -150},
            {"g": 230},
            {"g": 450, "price": 4, "weight_g": 280},
        ],
    ),
    line(
        "Stove fuel", "fuel", "{brand} {model} Liquid Fuel Bottle 1 L",
        "Fjellvik/Whiteout",
        "Leak-proof aluminium fuel bottle for liquid-fuel stoves, with a child-safe cap.",
        price=29, weight_g=150, colours=("Red",), tags="liquid-fuel",
    ),
    line(
        "Cookware", "pot", "{brand} {model} Titanium Pot {ml} ml",
        "Kestrel/Pika; Alpenglow/Summit",
        "A thin-walled titanium pot with folding handles and a lid; a fuel canister and "
        "stove nest inside.",
        price=49, weight_g=105, colours=("Titanium",),
        tags="titanium ultralight backpacking",
        variants=[{"ml": 750}, {"ml": 1100, "price": 12, "weight_g": 40}],
        fields={"material": "titanium", "capacity": "{ml} ml"},
    ),
    line(
        "Cookware", "mug", "{brand} {model} Titanium Mug 450 ml",
        "Trailwise/Sip",
        "Single-wall titanium mug you can put straight on a stove; measuring marks inside.",
        price=29, weight_g=65, colours=("Titanium",), tags="titanium ultralight",
        fields={"material": "titanium"},
    ),
    line(
        "Cookware", "cook-set", "{brand} {model} {people}-Person Cook Set",
        "Ridgeline/Hard-Anodized; Basecamp Basics/Camp Kitchen",
        "Nesting aluminium pots, a frying pan, plates and cups for {people} people, "
        "packed into the largest pot.",
        price=69, weight_g=900, colours=("Grey",),
        tags="aluminum set",
        variants=[{"people": 2, "tags": "backpacking"},
                  {"people": 4, "price": 30, "weight_g": 700, "tags": "group"}],
        fields={"material": "hard-anodised aluminium"},
    ),
    line(
        "Cookware", "cook-set", "{brand} {model} Stainless Family Cookware Set",
        "Cairnfield/Campfire",
        "A 10-piece stainless steel set with two pots, a kettle and a pan for cooking for "
        "four to six at the campsite.",
        price=119, weight_g=3200, colours=("Steel",),
        tags="stainless set group car-camping",
        fields={"material": "stainless steel"},
    ),
    line(
        "Cookware", "pan", "{brand} {model} Cast Iron Skillet 10 inch",
        "Cairnfield/Campfire; Granite Peak/Ironworks",
        "Pre-seasoned cast iron skillet for campfire cooking: heavy, indestructible and "
        "great for cornbread.",
        price=39, weight_g=2300, colours=("Black",), tags="cast-iron car-camping",
    ),
    line(
        "Cookware", "utensil", "{brand} {model} Titanium Long Spork",
        "Kestrel/Reach",
        "A long-handled spork that reaches the bottom of freeze-dried meal pouches.",
        price=12, weight_g=18, colours=("Titanium",), tags="titanium ultralight",
    ),
    line(
        "Cookware", "pot", "{brand} {model} Collapsible Silicone Pot 1.2 L",
        "Summit Supply/Flatpack",
        "A silicone pot with an aluminium base that collapses to 4 cm thick for packing.",
        price=39, weight_g=280, colours=("Orange",), tags="collapsible backpacking",
        fields={"capacity": "1.2 L"},
    ),
    line(
        "Cookware", "tableware", "{brand} {model} Camp Plate and Bowl Set",
        "Summit Supply/Mess Kit",
        "Four nesting plates, bowls and cups in BPA-free plastic.",
        price=29, weight_g=600, colours=("Green",), tags="set group",
    ),
    line(
        "Cookware", "kettle", "{brand} {model} Aluminium Camp Kettle 1 L",
        "Cairnfield/Whistle",
        "A lightweight kettle with a folding handle that sits on any stove.",
        price=32, weight_g=250, colours=("Silver",), tags="aluminum",
    ),
    line(
        "Cookware", "mug", "{brand} {model} Insulated Camp Mug",
        "Bluewater/Thermo",
        "A double-wall steel mug with a sliding lid that keeps coffee hot around the fire.",
        price=25, weight_g=300, colours=("Teal", "Black"), tags="insulated",
    ),
    line(
        "Cookware", "coffee", "{brand} {model} Pour-Over Coffee Dripper",
        "Summit Supply/Trail Brew",
        "Collapsible silicone coffee dripper that sits on any mug. Good coffee, anywhere.",
        price=19, weight_g=45, colours=("Grey",),
    ),
]

LIGHT = [
    line(
        "Headlamps", "headlamp", "{brand} {model} {lm} Rechargeable Headlamp",
        "Lumen & Pine/Trail; Ridgeline/Beam; Summit Supply/Night Hiker",
        (
            "A {lm}-lumen headlamp with a built-in battery you charge over USB-C, plus a red "
            "night-vision mode and a lock-out switch.",
            "Bright, USB-C rechargeable headlamp ({lm} lumens) with red light, dimming and "
            "a battery gauge.",
        ),
        price=49, weight_g=78, colours=("Black", "Orange"),
        tags="rechargeable usb-c red-light bright",
        variants=[{"lm": 400}, {"lm": 300, "price": -10, "weight_g": -10}],
        fields={"brightness": "{lm} lumens", "battery": "rechargeable Li-ion (USB-C)"},
    ),
    line(
        "Headlamps", "headlamp", "{brand} {model} {lm} Headlamp (AAA)",
        "Basecamp Basics/Everyday; Lumen & Pine/Classic; Granite Peak/Work",
        "A simple headlamp running on three AAA batteries (included), with spot, flood "
        "and red light modes. {lm} lumens.",
        price=24, weight_g=90, colours=("Black", "Blue"),
        tags="aaa red-light",
        variants=[{"lm": 200}, {"lm": 350, "price": 10, "tags": "bright"}],
        fields={"brightness": "{lm} lumens", "battery": "3x AAA"},
    ),
    line(
        "Headlamps", "headlamp", "{brand} {model} 450 Hybrid Headlamp",
        "Lumen & Pine/Duo",
        "Runs on its rechargeable pack or on AAA batteries when you are far from a plug; "
        "450 lumens with red light.",
        price=59, weight_g=86, colours=("Green",),
        tags="rechargeable aaa hybrid bright red-light",
        fields={"brightness": "450 lumens", "battery": "rechargeable or 3x AAA"},
    ),
    line(
        "Headlamps", "headlamp", "{brand} {model} {lm} Running Headlamp",
        "Lumen & Pine/Stride; Trailwise/Pace",
        "A bounce-free running headlamp with a rear battery and reflective band; USB-C "
        "rechargeable, {lm} lumens.",
        price=79, weight_g=110, colours=("Yellow",),
        tags="running rechargeable usb-c bright",
        variants=[{"lm": 500}],
        fields={"brightness": "{lm} lumens", "battery": "rechargeable Li-ion (USB-C)"},
    ),
    line(
        "Headlamps", "headlamp", "{brand} {model} 100 Ultralight Headlamp",
        "Kestrel/Nano",
        "A 30 g rechargeable headlamp for ultralight hikers and emergency kits; 100 lumens, "
        "charged over USB-C.",
        price=35, weight_g=30, colours=("Black",),
        tags="ultralight rechargeable usb-c running",
        fields={"brightness": "100 lumens", "battery": "rechargeable (USB-C)"},
    ),
    line(
        "Headlamps", "headlamp", "{brand} {model} Kids Headlamp",
        "Basecamp Basics/Glowbug",
        "A soft, adjustable headlamp for kids with a limited 50 lumen output and AAA "
        "batteries.",
        price=19, weight_g=70, colours=("Pink", "Green"), tags="kids aaa",
        fields={"brightness": "50 lumens", "battery": "3x AAA"},
    ),
    line(
        "Headlamps", "headlamp", "{brand} {model} 1200 Expedition Headlamp",
        "Fjellvik/Polar",
        "A 1200-lumen headlamp with a separate battery pack you can keep warm in your "
        "jacket; USB-C rechargeable.",
        price=129, weight_g=230, colours=("Orange",),
        tags="rechargeable usb-c bright winter",
        fields={"brightness": "1200 lumens", "battery": "rechargeable (USB-C)"},
    ),
    line(
        "Headlamps", "headlamp", "{brand} {model} 250 USB Headlamp",
        "Basecamp Basics/Charge",
        "Budget rechargeable headlamp with a micro-USB port and red light; 250 lumens.",
        price=25, weight_g=80, colours=("Black",),
        tags="rechargeable red-light micro-usb",
        fields={"brightness": "250 lumens", "battery": "rechargeable (micro-USB)"},
    ),
    line(
        "Lanterns", "lantern", "{brand} {model} Rechargeable Camp Lantern",
        "Lumen & Pine/Glow; Kestrel/Micro",
        "A dimmable LED lantern that charges over USB-C and can top up your phone; hangs "
        "from a tent loop.",
        price=39, weight_g=240, colours=("Green",), tags="rechargeable usb-c",
    ),
    line(
        "Lanterns", "lantern", "{brand} {model} LED Lantern (D Batteries)",
        "Basecamp Basics/Campground",
        "A big 1000-lumen battery lantern for picnic tables; runs for days on three D cells.",
        price=29, weight_g=900, colours=("Black",), tags="battery car-camping",
    ),
    line(
        "Lanterns", "lantern", "{brand} {model} Propane Lantern",
        "Cairnfield/Classic",
        "A classic mantle lantern on a 1 lb propane cylinder; bright and warm-toned.",
        price=45, weight_g=1100, colours=("Green",), tags="propane car-camping",
    ),
    line(
        "Lanterns", "lantern", "{brand} {model} Solar Inflatable Lantern",
        "Bluewater/Sunpuff",
        "Collapsible lantern with a solar panel; inflates into a soft diffuser.",
        price=25, weight_g=110, colours=("White",), tags="solar ultralight",
    ),
]

CLOTHING = [
    line(
        "Jackets", "jacket", "{brand} {model} Rain Jacket - {gender}",
        "Fjellvik/Stormline 3L; Northhollow/Cloudburst; Basecamp Basics/Drizzle",
        (
            "A fully waterproof, breathable hooded rain shell with taped seams, pit zips "
            "and an adjustable hood. {gender} fit.",
            "Packable waterproof jacket that stuffs into its own chest pocket; "
            "seam-sealed and hooded.",
        ),
        price=199, weight_g=380, colours=("Red", "Blue", "Black"),
        tags="rain waterproof hooded packable",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}", "waterproofing": "20,000 mm"},
    ),
    line(
        "Jackets", "jacket", "{brand} {model} Down Jacket - {gender}",
        "Alpenglow/Ember; Fjellvik/Nordkapp",
        "Warm 800-fill down insulation in a light ripstop shell; a hooded insulated jacket "
        "for cold camps and winter walks. {gender} fit.",
        price=279, weight_g=420, colours=("Black", "Teal"),
        tags="insulated down winter",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}", "insulation": "800-fill down"},
    ),
    line(
        "Jackets", "vest", "{brand} {model} Down Vest - {gender}",
        "Alpenglow/Ember",
        "A sleeveless 800-fill down vest for layering on cold mornings.",
        price=169, weight_g=240, colours=("Black", "Teal"),
        tags="insulated down",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}", "insulation": "800-fill down"},
    ),
    line(
        "Jackets", "jacket", "{brand} {model} Synthetic Insulated Hoody - {gender}",
        "Northhollow/Thermal; Basecamp Basics/Puffer",
        "Synthetic insulation that stays warm when wet; breathable enough to climb in.",
        price=189, weight_g=390, colours=("Orange", "Green"),
        tags="insulated synthetic",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}", "insulation": "synthetic"},
    ),
    line(
        "Jackets", "jacket", "{brand} {model} Insulated Winter Parka - {gender}",
        "Granite Peak/Tundra; Northhollow/Polar",
        "A thigh-length synthetic parka with a fur-free ruff and a two-way zip for the "
        "coldest days in town or at camp.",
        price=259, weight_g=1100, colours=("Black", "Forest Green"),
        tags="insulated synthetic winter",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}", "insulation": "synthetic"},
    ),
    line(
        "Jackets", "jacket", "{brand} {model} Kids Rain Jacket",
        "Basecamp Basics/Puddle",
        "A waterproof, hooded rain jacket for kids with reflective trim.",
        price=45, weight_g=250, colours=("Yellow",), tags="rain waterproof kids",
        fields={"fit": "Kids"},
    ),
    line(
        "Jackets", "jacket", "{brand} {model} Softshell Jacket - {gender}",
        "Granite Peak/Scramble",
        "Stretchy, wind-resistant softshell with a water-repellent finish for active days. "
        "Not waterproof in a downpour.",
        price=149, weight_g=480, colours=("Slate Grey",),
        tags="softshell water-resistant",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}"},
    ),
    line(
        "Jackets", "jacket", "{brand} {model} Fleece Jacket - {gender}",
        "Ridgeline/Grid",
        "A breathable grid fleece mid-layer with a full zip and thumb loops.",
        price=89, weight_g=330, colours=("Navy", "Rust"),
        tags="fleece",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}"},
    ),
    line(
        "Jackets", "jacket", "{brand} {model} Wind Jacket",
        "Kestrel/Wisp",
        "A 60 g wind shirt that packs into its own pocket; shrugs off drizzle but is not "
        "waterproof.",
        price=99, weight_g=60, colours=("Yellow",),
        tags="wind ultralight packable men women",
        fields={"fit": "Unisex"},
    ),
    line(
        "Trousers", "pants", "{brand} {model} Rain Pants - {gender}",
        "Fjellvik/Stormline 3L",
        "Waterproof overtrousers with full-length side zips to pull on over boots.",
        price=149, weight_g=300, colours=("Black",),
        tags="rain waterproof",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}"},
    ),
    line(
        "Trousers", "pants", "{brand} {model} Convertible Hiking Pants - {gender}",
        "Ridgeline/Switchback",
        "Quick-drying zip-off hiking pants that convert to shorts.",
        price=69, weight_g=350, colours=("Khaki",),
        variants=MEN_WOMEN,
        fields={"fit": "{gender}"},
    ),
    line(
        "Base layers", "base-layer", "{brand} {model} Merino Base Layer Top - {gender}",
        "Alpenglow/Kinetic 200; Summit Supply/Everyday Wool",
        "Long-sleeve 200 gsm merino wool base layer that stays warm and does not smell "
        "after days on the trail.",
        price=89, weight_g=210, colours=("Black", "Heather Grey"),
        tags="merino top",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}", "material": "merino wool"},
    ),
    line(
        "Base layers", "base-layer", "{brand} {model} Synthetic Base Layer Top - {gender}",
        "Basecamp Basics/Wicking",
        "A quick-drying polyester base layer for sweaty hikes; cheaper than merino.",
        price=29, weight_g=180, colours=("Blue",),
        tags="synthetic top",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}", "material": "polyester"},
    ),
    line(
        "Base layers", "socks", "{brand} {model} Merino Hiking Socks",
        "Summit Supply/Trail Crew; Alpenglow/Light Hiker",
        "Cushioned merino wool hiking socks with a lifetime guarantee.",
        price=24, weight_g=70, colours=("Grey",), tags="merino",
    ),
    line(
        "Base layers", "socks", "{brand} {model} Crew Socks (3-Pack)",
        "Basecamp Basics/Everyday",
        "Cotton-blend crew socks for camp and casual walks.",
        price=15, weight_g=150, colours=("Assorted",),
    ),
    line(
        "Hats & gloves", "hat", "{brand} {model} Fleece Beanie",
        "Ridgeline/Grid; Summit Supply/Cosy",
        "A warm, stretchy fleece beanie that fits under a hood.",
        price=25, weight_g=50, colours=("Navy", "Rust"), tags="fleece",
    ),
    line(
        "Hats & gloves", "hat", "{brand} {model} Wide-Brim Sun Hat",
        "Bluewater/Shade",
        "A UPF 50 sun hat with a chin strap and a mesh vent band.",
        price=35, weight_g=90, colours=("Khaki",),
    ),
    line(
        "Hats & gloves", "gloves", "{brand} {model} Insulated Gloves - {gender}",
        "Fjellvik/Frost",
        "Waterproof insulated gloves with a leather palm for winter hiking and skiing.",
        price=69, weight_g=180, colours=("Black",), tags="insulated waterproof winter",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}"},
    ),
]

FOOTWEAR = [
    line(
        "Hiking boots", "boot", "{brand} {model} Mid Waterproof Hiking Boot - {gender}",
        "Stridekit/Ridge; Granite Peak/Talus; Northhollow/Canyon; Alpenglow/Highland",
        (
            "A waterproof mid-height hiking boot with a breathable membrane, grippy lugged "
            "outsole and a cushioned midsole. {gender} sizes.",
            "Comfortable out of the box: this waterproof mid boot keeps feet dry on muddy "
            "trails and supports the ankle under a daypack.",
        ),
        price=169, weight_g=1050, colours=("Brown", "Grey"),
        tags="waterproof mid hiking",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}", "waterproof": "yes"},
    ),
    line(
        "Hiking boots", "boot", "{brand} {model} Mid Vent Hiking Boot - {gender}",
        "Stridekit/Ridge",
        "The breathable, non-waterproof version of our best-selling boot, for hot and dry "
        "trails.",
        price=149, weight_g=980, colours=("Tan",),
        tags="breathable mid hiking",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}", "waterproof": "no"},
    ),
    line(
        "Hiking boots", "boot", "{brand} {model} Low Waterproof Hiking Shoe - {gender}",
        "Stridekit/Ridge",
        "Low-cut waterproof hiking shoe with the same membrane and outsole as the Ridge Mid.",
        price=139, weight_g=820, colours=("Grey",),
        tags="waterproof low hiking",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}", "waterproof": "yes"},
    ),
    line(
        "Hiking boots", "boot", "{brand} {model} Leather Backpacking Boot - {gender}",
        "Fjellvik/Vandra",
        "Full-grain leather boot with a waterproof lining and a stiff midsole for heavy "
        "loads and rough terrain.",
        price=249, weight_g=1450, colours=("Brown",),
        tags="waterproof leather backpacking hiking",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}", "waterproof": "yes"},
    ),
    line(
        "Hiking boots", "boot", "{brand} {model} Insulated Snow Boot - {gender}",
        "Fjellvik/Snowline",
        "A waterproof, 200 g insulated winter boot for snowshoeing and frosty town walks.",
        price=189, weight_g=1500, colours=("Black",),
        tags="waterproof insulated snow winter",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}", "waterproof": "yes"},
    ),
    line(
        "Hiking boots", "boot", "{brand} {model} Kids Waterproof Hiking Boot",
        "Basecamp Basics/Little Trail",
        "Waterproof kids' boot with hook-and-loop closure, so little hikers can put it on "
        "themselves.",
        price=59, weight_g=600, colours=("Blue",), tags="waterproof kids hiking",
    ),
    line(
        "Trail shoes", "trail-shoe", "{brand} {model} Trail Running Shoe - {gender}",
        "Stridekit/Skyrun; Trailwise/Tempo; Northhollow/Fleet",
        (
            "A light, cushioned trail runner with a rock plate and 5 mm lugs for technical "
            "terrain. {gender} fit.",
            "Fast, breathable trail running shoe that many thru-hikers wear instead of boots.",
        ),
        price=139, weight_g=580, colours=("Lime", "Blue"),
        tags="trail-runner",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}"},
    ),
    line(
        "Trail shoes", "trail-shoe", "{brand} {model} Waterproof Trail Running Shoe - {gender}",
        "Stridekit/Skyrun",
        "Our Skyrun trail runner with a waterproof membrane for wet winter runs.",
        price=159, weight_g=620, colours=("Black",),
        tags="trail-runner waterproof",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}"},
    ),
    line(
        "Trail shoes", "trail-shoe", "{brand} {model} Trail Running Shoe Wide - Men's",
        "Trailwise/Tempo",
        "The Tempo on a wide last with a roomy toe box for long days.",
        price=139, weight_g=600, colours=("Grey",),
        tags="trail-runner wide men",
        fields={"fit": "Men's wide"},
    ),
    line(
        "Trail shoes", "trail-shoe", "{brand} {model} Approach Shoe - {gender}",
        "Granite Peak/Scree",
        "Sticky-rubber approach shoe for scrambling to the crag.",
        price=149, weight_g=760, colours=("Grey",),
        tags="approach",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}"},
    ),
    line(
        "Trail shoes", "sandal", "{brand} {model} River Sandal - {gender}",
        "Bluewater/Current",
        "A strappy hiking sandal for river crossings and camp.",
        price=79, weight_g=540, colours=("Black",),
        tags="sandal",
        variants=MEN_WOMEN,
        fields={"fit": "{gender}"},
    ),
]

WATER = [
    line(
        "Water treatment", "water-filter", "{brand} {model} Water Filter",
        "Hydrosafe/Squeeze; Hydrosafe/Squeeze Mini; Trailwise/Pocket Squeeze",
        (
            "A hollow-fiber squeeze filter that removes 99.9999% of bacteria and protozoa; "
            "screw it onto a soft bottle or inline on a hydration hose.",
            "Fill the pouch, squeeze, drink: a light 0.1 micron filter for backpacking.",
        ),
        price=39, weight_g=85, colours=("Blue",),
        tags="squeeze ultralight backpacking",
        fields={"pore_size": "0.1 micron"},
    ),
    line(
        "Water treatment", "water-filter", "{brand} {model} Personal Straw Filter",
        "Hydrosafe/Sip",
        "Drink straight from streams through this straw filter; no batteries or chemicals.",
        price=19, weight_g=50, colours=("Blue",), tags="straw ultralight",
    ),
    line(
        "Water treatment", "water-filter", "{brand} {model} {litres} L Gravity Filter",
        "Hydrosafe/Camp Flow; Granite Peak/Base Camp",
        "Hang the bag and let gravity filter {litres} litres for the whole group while you "
        "set up camp.",
        price=99, weight_g=330, colours=("Blue", "Green"),
        tags="gravity group",
        variants=[{"litres": 4}, {"litres": 10, "price": 30, "weight_g": 120}],
    ),
    line(
        "Water treatment", "water-filter", "{brand} {model} Pump Water Filter",
        "Fjellvik/Flow",
        "A field-maintainable pump filter for shallow or silty sources.",
        price=89, weight_g=310, colours=("Grey",), tags="pump",
    ),
    line(
        "Water treatment", "water-purifier", "{brand} {model} UV Water Purifier Pen",
        "Hydrosafe/SunPen",
        "Stir for 90 seconds and UV light destroys viruses, bacteria and protozoa. "
        "Rechargeable over USB.",
        price=89, weight_g=140, colours=("Black",), tags="purifier virus uv rechargeable",
    ),
    line(
        "Water treatment", "water-purifier", "{brand} {model} Water Purifier Pump",
        "Fjellvik/Guardian",
        "A purifier pump that removes viruses as well as bacteria; for international travel "
        "and dubious sources.",
        price=349, weight_g=490, colours=("Grey",), tags="purifier virus pump",
    ),
    line(
        "Water treatment", "water-purifier", "{brand} {model} Water Purification Tablets (30)",
        "Basecamp Basics/Aqua",
        "Chlorine dioxide tablets that kill viruses, bacteria and cysts in four hours.",
        price=12, weight_g=20, colours=("White",),
        tags="purifier virus tablets ultralight",
    ),
    line(
        "Water treatment", "water-filter", "{brand} {model} Filter Water Bottle 750 ml",
        "Bluewater/Clearsip",
        "A water bottle with a built-in carbon and hollow-fiber filter for hiking and "
        "travel.",
        price=45, weight_g=190, colours=("Teal", "Clear"), tags="bottle",
    ),
    line(
        "Water treatment", "filter-part", "{brand} {model} Replacement Filter Cartridge",
        "Hydrosafe/Camp Flow",
        "A spare cartridge for the Camp Flow gravity filter.",
        price=39, weight_g=70, colours=("Blue",), tags="gravity",
    ),
    line(
        "Hydration", "reservoir", "{brand} {model} {litres} L Hydration Reservoir",
        "Bluewater/Hydro",
        "A {litres} litre bladder with a quick-disconnect hose and a slide-top opening.",
        price=35, weight_g=190, colours=("Clear",), tags="hydration",
        variants=[{"litres": 2}, {"litres": 3, "price": 5, "weight_g": 30}],
    ),
    line(
        "Hydration", "bottle", "{brand} {model} Soft Flask 500 ml",
        "Bluewater/Squish",
        "A collapsible soft flask for running vests; compatible with squeeze filters.",
        price=22, weight_g=30, colours=("Clear",), tags="ultralight running",
    ),
    line(
        "Hydration", "bottle", "{brand} {model} Insulated Bottle 1 L",
        "Bluewater/Thermo",
        "A double-wall steel bottle that keeps drinks hot for twelve hours.",
        price=35, weight_g=450, colours=("Teal", "Black"), tags="insulated",
    ),
]

CARRY_AND_CAMP = [
    line(
        "Trekking poles", "trekking-pole", "{brand} {model} Carbon Folding Trekking Poles",
        "Kestrel/Carbon Z; Trailwise/Carbon Fold",
        (
            "Three-section folding carbon poles that collapse to 38 cm and weigh {kg} kg "
            "per pair; foam grips.",
            "Ultralight carbon fibre trekking poles that fold like a tent pole for stowing "
            "on your pack.",
        ),
        price=169, weight_g=290, colours=("Black",),
        tags="carbon folding ultralight",
        fields={"material": "carbon fibre"},
    ),
    line(
        "Trekking poles", "trekking-pole", "{brand} {model} Women's Carbon Folding Poles",
        "Kestrel/Carbon Z",
        "A shorter women's version of the Carbon Z folding poles with slimmer grips.",
        price=169, weight_g=270, colours=("Berry",),
        tags="carbon folding ultralight women",
        fields={"material": "carbon fibre"},
    ),
    line(
        "Trekking poles", "trekking-pole", "{brand} {model} Aluminium Trekking Poles",
        "Ridgeline/Alu Trek; Basecamp Basics/Hillwalker; Granite Peak/Quicklock",
        "Two-section telescoping aluminium poles with lever locks and cork grips; tough "
        "and easy to adjust.",
        price=79, weight_g=520, colours=("Silver", "Blue"),
        tags="aluminum telescoping",
        fields={"material": "aluminium"},
    ),
    line(
        "Trekking poles", "trekking-pole", "{brand} {model} Carbon Telescoping Trekking Poles",
        "Fjellvik/Carbon Trek",
        "Stiff carbon poles with external lever locks and snow baskets included.",
        price=149, weight_g=430, colours=("Black",),
        tags="carbon telescoping",
        fields={"material": "carbon fibre"},
    ),
    line(
        "Trekking poles", "trekking-pole", "{brand} {model} Women's Folding Trekking Poles",
        "Alpenglow/Fold",
        "Compact folding aluminum poles sized for women, with cork grips.",
        price=119, weight_g=440, colours=("Teal",),
        tags="aluminum folding women",
        fields={"material": "aluminium"},
    ),
    line(
        "Trekking poles", "trekking-pole", "{brand} {model} Kids Trekking Poles",
        "Basecamp Basics/Junior",
        "Short telescoping aluminium poles sized for children from 100 cm tall.",
        price=39, weight_g=380, colours=("Green",), tags="aluminum telescoping kids",
        fields={"material": "aluminium"},
    ),
    line(
        "Trekking poles", "pole-part", "{brand} {model} Replacement Pole Tips",
        "Ridgeline/Trek",
        "Rubber tips and carbide tip protectors for most trekking poles.",
        price=12, weight_g=40, colours=("Black",),
    ),
    line(
        "Camp furniture", "chair", "{brand} {model} Ultralight Camp Chair",
        "Kestrel/Air; Trailwise/Lite",
        "A packable camp chair with a shock-corded aluminium frame; weighs under 1 kg and "
        "sets up in seconds.",
        price=109, weight_g=900, colours=("Black", "Blue"),
        tags="ultralight backpacking",
    ),
    line(
        "Camp furniture", "chair", "{brand} {model} Folding Camp Chair",
        "Basecamp Basics/Quad; Cairnfield/Rocker; Granite Peak/Director",
        "A sturdy folding chair with a cup holder and armrests for the campsite.",
        price=49, weight_g=4100, colours=("Green", "Red"),
        tags="car-camping",
    ),
    line(
        "Camp furniture", "table", "{brand} {model} Roll-Top Camp Table",
        "Cairnfield/Picnic; Kestrel/Lite",
        "A roll-up aluminium camp table that packs into a small bag.",
        price=79, weight_g=2300, colours=("Silver",),
    ),
    line(
        "Camp furniture", "hammock", "{brand} {model} Camping Hammock",
        "Bluewater/Drift",
        "A double nylon hammock with tree straps; bring a tarp if rain is forecast.",
        price=59, weight_g=560, colours=("Turquoise",),
    ),
    line(
        "Camp furniture", "cot", "{brand} {model} Camp Cot",
        "Granite Peak/Base",
        "An off-the-ground folding cot that supports 140 kg.",
        price=99, weight_g=7000, colours=("Green",), tags="car-camping",
    ),
    line(
        "Storage", "dry-bag", "{brand} {model} Dry Bag {litres} L",
        "Bluewater/River; Ridgeline/Featherlite",
        "A roll-top dry bag in welded {fabric} that keeps clothes and electronics dry "
        "on river trips and rainy hikes.",
        price=19, weight_g=120, colours=("Yellow", "Blue", "Red"),
        tags="roll-top {litres}l",
        variants=[
            {"litres": 10, "fabric": "PVC tarpaulin"},
            {"litres": 20, "fabric": "PVC tarpaulin", "price": 6, "weight_g": 60},
            {"litres": 35, "fabric": "PVC tarpaulin", "price": 10, "weight_g": 120},
        ],
    ),
    line(
        "Storage", "stuff-sack", "{brand} {model} Compression Stuff Sack 20 L",
        "Fjellvik/Compress",
        "Four compression straps squeeze a sleeping bag down to half its size.",
        price=29, weight_g=130, colours=("Black",), tags="20l",
    ),
    line(
        "Storage", "pack-cover", "{brand} {model} Backpack Rain Cover {size}",
        "Ridgeline/Shield",
        "A waterproof cover for packs of {range} litres, with an elastic hem.",
        price=25, weight_g=110, colours=("Orange",), tags="rain waterproof",
        variants=[{"size": "M", "range": "30-50"}, {"size": "L", "range": "50-75"}],
    ),
    line(
        "Storage", "towel", "{brand} {model} Quick-Dry Camp Towel {size}",
        "Summit Supply/Microfibre",
        "A microfibre towel that dries fast and packs small, with a hanging loop.",
        price=19, weight_g=110, colours=("Blue", "Grey"),
        variants=[{"size": "M"}, {"size": "L", "price": 6, "weight_g": 80}],
    ),
    line(
        "Storage", "bear-canister", "{brand} {model} Bear Canister",
        "Granite Peak/Bruin",
        "A hard-sided bear-resistant food canister approved for parks that require one.",
        price=89, weight_g=1150, colours=("Black",),
    ),
]

GEAR = [
    line(
        "Electronics", "power-bank", "{brand} {model} {mah} mAh Power Bank",
        "Lumen & Pine/Charge; Summit Supply/Boost",
        "A rugged USB-C power bank for phones, headlamps and GPS units on multi-day trips.",
        price=49, weight_g=190, colours=("Black",), tags="rechargeable usb-c",
        variants=[{"mah": 10000}, {"mah": 20000, "price": 20, "weight_g": 150}],
    ),
    line(
        "Electronics", "solar-panel", "{brand} {model} 21 W Solar Panel",
        "Bluewater/Sunfold",
        "Folding solar charger that clips to your pack and charges over USB.",
        price=89, weight_g=500, colours=("Black",), tags="solar",
    ),
    line(
        "Navigation", "gps", "{brand} {model} Handheld GPS",
        "Fjellvik/Trailfinder",
        "A rugged handheld GPS with topo maps, running for 20 hours on two AA batteries.",
        price=299, weight_g=230, colours=("Orange",),
    ),
    line(
        "Navigation", "satellite-messenger", "{brand} {model} Satellite Messenger",
        "Lumen & Pine/Beacon",
        "Send SOS and check-in messages by satellite where phones have no signal; "
        "USB-C rechargeable.",
        price=349, weight_g=110, colours=("Black",), tags="rechargeable usb-c",
    ),
    line(
        "Navigation", "compass", "{brand} {model} Baseplate Compass",
        "Fjellvik/Orient",
        "A baseplate compass with declination adjustment and a sighting mirror.",
        price=45, weight_g=75, colours=("Clear",),
    ),
    line(
        "Safety", "first-aid", "{brand} {model} Ultralight First Aid Kit",
        "Kestrel/Essentials; Summit Supply/Trail",
        "A 100 g first aid kit with blister care, dressings and medications for one or two "
        "people on a weekend trip.",
        price=29, weight_g=110, colours=("Red",), tags="ultralight",
    ),
    line(
        "Safety", "first-aid", "{brand} {model} Family First Aid Kit",
        "Basecamp Basics/Campground",
        "A comprehensive 180-piece first aid kit for car camping and road trips.",
        price=39, weight_g=850, colours=("Red",), tags="car-camping group",
    ),
    line(
        "Safety", "emergency", "{brand} {model} Emergency Bivvy Blanket",
        "Basecamp Basics/SOS",
        "A reflective emergency blanket that folds to the size of a deck of cards.",
        price=9, weight_g=80, colours=("Silver",), tags="ultralight",
    ),
    line(
        "Safety", "insect", "{brand} {model} Mosquito Head Net",
        "Trailwise/Bugout",
        "No-see-um mesh head net that fits over a cap; weighs almost nothing.",
        price=12, weight_g=25, colours=("Black",), tags="ultralight",
    ),
    line(
        "Safety", "insect", "{brand} {model} Insect Repellent Spray",
        "Summit Supply/Bite Shield",
        "A 20% picaridin spray that repels mosquitoes and ticks for up to 12 hours.",
        price=11, weight_g=120, colours=("Green",),
    ),
    line(
        "Footwear accessories", "gaiters", "{brand} {model} Trail Gaiters",
        "Granite Peak/Scree",
        "Waterproof gaiters that keep snow, mud and stones out of your boots.",
        price=49, weight_g=230, colours=("Black",), tags="waterproof winter",
    ),
    line(
        "Footwear accessories", "traction", "{brand} {model} Traction Spikes",
        "Granite Peak/Icegrip",
        "Stainless steel spikes that slip over hiking boots for icy winter trails.",
        price=69, weight_g=390, colours=("Red",), tags="winter",
    ),
    line(
        "Camp furniture", "sit-pad", "{brand} {model} Foam Sit Pad",
        "Kestrel/Perch",
        "A folding closed-cell foam seat pad for lunch breaks on cold, wet ground.",
        price=15, weight_g=60, colours=("Yellow",), tags="foam ultralight",
    ),
    line(
        "Knives & tools", "multitool", "{brand} {model} Multi-Tool",
        "Granite Peak/Fixer; Basecamp Basics/Handy",
        "Pliers, knife, saw, screwdrivers and a bottle opener in a stainless body.",
        price=69, weight_g=240, colours=("Steel",),
    ),
    line(
        "Knives & tools", "knife", "{brand} {model} Folding Pocket Knife",
        "Fjellvik/Slöjd",
        "A locking folding knife with a 7.5 cm stainless blade.",
        price=39, weight_g=85, colours=("Birch",),
    ),
    line(
        "Knives & tools", "saw", "{brand} {model} Folding Camp Saw",
        "Cairnfield/Timber",
        "A 21 cm folding saw for firewood and clearing trails.",
        price=29, weight_g=280, colours=("Orange",), tags="car-camping",
    ),
]

ALL_LINES: tuple[Line, ...] = (
    *TENTS, *TENT_ACCESSORIES, *SLEEP, *PACKS, *COOKING, *LIGHT, *CLOTHING, *FOOTWEAR,
    *WATER, *CARRY_AND_CAMP, *GEAR,
)
# fmt: on
