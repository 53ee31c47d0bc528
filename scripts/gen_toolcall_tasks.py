"""Generate ToolCall-v0's bundled tasks: problems that need real computation, each with an exact answer.

Every task is drawn from its own ``random.Random`` (seeded from the global seed, the family and the
index), so the output is byte-for-byte reproducible. For each task the generator computes the answer
itself (exact rational arithmetic, its own calendar and number-theory code) and also writes an oracle
``solution_code`` program in the style an agent would write (``datetime``, ``Decimal``, ``math``);
generation fails unless running that program prints exactly the generator's answer, so the two
independent computations check each other.

    python scripts/gen_toolcall_tasks.py            # writes clawgym/envs/toolcall/tasks.jsonl
    python scripts/gen_toolcall_tasks.py --check    # regenerates and fails if the committed file differs
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import random
import sys
from fractions import Fraction
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's clawgym, installed or not

from clawgym.core.tasks import write_or_check  # noqa: E402

OUTPUT = Path(__file__).resolve().parents[1] / "clawgym" / "envs" / "toolcall" / "tasks.jsonl"
PER_FAMILY = 13
TEST_PER_FAMILY = 3  # the last ones of each family form the test split

NAMES = ["Maya", "Omar", "Lena", "Ravi", "Sofia", "Kenji", "Amara", "Lucas", "Ines", "Tomas", "Priya", "Jonah"]
ITEMS = [("notebook", "notebooks"), ("pen", "pens"), ("mug", "mugs"), ("towel", "towels"), ("candle", "candles"),
         ("lamp", "lamps"), ("plant", "plants"), ("bottle of juice", "bottles of juice"),
         ("box of tea", "boxes of tea")]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


# ---------------------------------------------------------------------------------------------- helpers
def round_half_up(value: Fraction, decimals: int) -> str:
    """Exact decimal rounding (half away from zero) of a rational, formatted with ``decimals`` places."""
    scale = 10 ** decimals
    sign = "-" if value < 0 else ""
    n = math.floor(abs(value) * scale + Fraction(1, 2))
    if n == 0:
        sign = ""
    whole, frac = divmod(n, scale)
    return f"{sign}{whole}.{frac:0{decimals}d}" if decimals else f"{sign}{whole}"


def sqrt_round_half_up(value: Fraction, decimals: int) -> str:
    """sqrt(value) rounded half-up, exactly: floor via isqrt, then compare with the midpoint squared."""
    scaled = value * 100 ** decimals
    root = math.isqrt(math.floor(scaled))
    if scaled >= Fraction(2 * root + 1, 2) ** 2:
        root += 1
    whole, frac = divmod(root, 10 ** decimals)
    return f"{whole}.{frac:0{decimals}d}"


def money(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's algorithm)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


def zeller_weekday(y: int, m: int, d: int) -> str:
    if m < 3:
        m, y = m + 12, y - 1
    k, j = y % 100, y // 100
    h = (d + (13 * (m + 1)) // 5 + k + k // 4 + j // 4 + 5 * j) % 7  # 0 = Saturday
    return WEEKDAYS[(h + 5) % 7]


def random_date(rng: random.Random, first_year: int, last_year: int) -> tuple[int, int, int]:
    start, end = days_from_civil(first_year, 1, 1), days_from_civil(last_year, 12, 31)
    return civil_from_days(rng.randint(start, end))


def spoken(y: int, m: int, d: int) -> str:
    return f"{MONTHS[m - 1]} {d}, {y}"


def iso(y: int, m: int, d: int) -> str:
    return f"{y:04d}-{m:02d}-{d:02d}"


def sieve(limit: int) -> list[int]:
    flags = [True] * (limit + 1)
    flags[0] = flags[1] = False
    for p in range(2, math.isqrt(limit) + 1):
        if flags[p]:
            for q in range(p * p, limit + 1, p):
                flags[q] = False
    return [n for n, is_prime in enumerate(flags) if is_prime]


def egcd(a: int, b: int) -> tuple[int, int, int]:
    x0, x1, y0, y1 = 1, 0, 0, 1
    while b:
        q, a, b = a // b, b, a % b
        x0, x1 = x1, x0 - q * x1
        y0, y1 = y1, y0 - q * y1
    return a, x0, y0


def choose(n: int, k: int) -> int:
    if k < 0 or k > n:
        return 0
    result = 1
    for i in range(1, min(k, n - k) + 1):
        result = result * (n - i + 1) // i
    return result


def fib_pair(n: int, m: int) -> tuple[int, int]:
    """(F(n) mod m, F(n+1) mod m) by fast doubling."""
    if n == 0:
        return 0, 1 % m
    a, b = fib_pair(n // 2, m)
    c = a * ((2 * b - a) % m) % m
    d = (a * a + b * b) % m
    return (d, (c + d) % m) if n % 2 else (c, d)


def is_prime(n: int) -> bool:
    if n < 2:
        return False
    return all(n % p for p in range(2, math.isqrt(n) + 1))


def random_prime(rng: random.Random, low: int, high: int) -> int:
    while True:
        n = rng.randint(low, high)
        if is_prime(n):
            return n


Task = dict  # {"prompt", "answer", "code", optional "decimals"}


# ---------------------------------------------------------------------------------------------- families
def shopping(rng: random.Random) -> Task:
    (one, many), (one2, many2) = rng.sample(ITEMS, 2)
    p, q = rng.randint(125, 999), rng.randint(125, 999)  # cents
    a, b = rng.randint(3, 25), rng.randint(2, 30)
    discount = rng.choice([5, 10, 12, 15, 20, 25, 30])
    tax = Fraction(rng.randint(40, 105), 10)
    name = rng.choice(NAMES)
    total = Fraction(p * a + q * b, 100) * (1 - Fraction(discount, 100)) * (1 + tax / 100)
    prompt = (f"A shop sells {many} at ${money(p)} each and {many2} at ${money(q)} each. {name} buys {a} {many} "
              f"and {b} {many2}. A coupon takes {discount}% off the whole purchase, and then a sales tax of "
              f"{float(tax):g}% is added to the discounted price. How much does {name} pay, in dollars? "
              "Round to the nearest cent.")
    code = f"""from decimal import Decimal, ROUND_HALF_UP
subtotal = Decimal("{money(p)}") * {a} + Decimal("{money(q)}") * {b}
total = subtotal * (1 - Decimal({discount}) / 100) * (1 + Decimal("{float(tax):g}") / 100)
print(total.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
"""
    return {"prompt": prompt, "answer": round_half_up(total, 2), "code": code, "decimals": 2}


def compound_interest(rng: random.Random) -> Task:
    principal = rng.randint(10, 500) * 100
    rate = Fraction(rng.randint(15, 95), 10)
    n, label = rng.choice([(1, "annually"), (4, "quarterly"), (12, "monthly"), (365, "daily")])
    years = rng.randint(2, 30)
    amount = principal * (1 + rate / 100 / n) ** (n * years)
    prompt = (f"${principal} is deposited in an account paying {float(rate):g}% annual interest, compounded "
              f"{label}. What is the balance after {years} years, in dollars? Round to the nearest cent.")
    code = f"""from decimal import Decimal, getcontext, ROUND_HALF_UP
getcontext().prec = 60
amount = Decimal({principal}) * (1 + Decimal("{float(rate):g}") / 100 / {n}) ** ({n} * {years})
print(amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
"""
    return {"prompt": prompt, "answer": round_half_up(amount, 2), "code": code, "decimals": 2}


def loan_payment(rng: random.Random) -> Task:
    loan = rng.randint(50, 600) * 1000
    rate = Fraction(rng.randint(25, 90), 10)
    years = rng.choice([5, 10, 15, 20, 25, 30])
    i, n = rate / 1200, 12 * years
    payment = loan * i / (1 - 1 / (1 + i) ** n)
    prompt = (f"A ${loan} loan is repaid with equal monthly payments over {years} years at an annual interest "
              f"rate of {float(rate):g}% compounded monthly (standard amortization). What is the monthly payment, "
              "in dollars? Round to the nearest cent.")
    code = f"""from decimal import Decimal, getcontext, ROUND_HALF_UP
getcontext().prec = 60
i = Decimal("{float(rate):g}") / 1200
n = {n}
payment = {loan} * i / (1 - 1 / (1 + i) ** n)
print(payment.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
"""
    return {"prompt": prompt, "answer": round_half_up(payment, 2), "code": code, "decimals": 2}


def unit_conversion(rng: random.Random) -> Task:
    kind = rng.choice(["speed", "fuel", "area", "temperature"])
    if kind == "speed":
        miles = Fraction(rng.randint(500, 6000), 10)
        hours, minutes = rng.randint(1, 9), rng.randint(1, 59)
        value = miles * Fraction("1609.344") / (hours * 3600 + minutes * 60)
        prompt = (f"A car covers {float(miles):g} miles in {hours} hours and {minutes} minutes. What is its average "
                  "speed in meters per second? (1 mile = 1609.344 m.) Round to 3 decimal places.")
        expr = f'Decimal("{float(miles):g}") * Decimal("1609.344") / ({hours} * 3600 + {minutes} * 60)'
        decimals = 3
    elif kind == "fuel":
        mpg = Fraction(rng.randint(150, 550), 10)
        value = 100 * Fraction("3.785411784") / (mpg * Fraction("1.609344"))
        prompt = (f"A car's fuel economy is {float(mpg):g} miles per US gallon. What is it in liters per 100 km? "
                  "(1 US gallon = 3.785411784 L, 1 mile = 1.609344 km.) Round to 3 decimal places.")
        expr = f'100 * Decimal("3.785411784") / (Decimal("{float(mpg):g}") * Decimal("1.609344"))'
        decimals = 3
    elif kind == "area":
        a, b = rng.randint(50, 900), rng.randint(50, 900)
        value = a * b * Fraction("0.3048") ** 2 / 10000
        prompt = (f"A rectangular field measures {a} ft by {b} ft. What is its area in hectares? "
                  "(1 ft = 0.3048 m, 1 hectare = 10,000 m^2.) Round to 4 decimal places.")
        expr = f'{a} * {b} * Decimal("0.3048") ** 2 / 10000'
        decimals = 4
    else:
        fahrenheit = Fraction(rng.randint(-400, 2500), 10)
        value = (fahrenheit - 32) * Fraction(5, 9) + Fraction("273.15")
        prompt = (f"Convert {float(fahrenheit):g} degrees Fahrenheit to kelvin. Round to 2 decimal places.")
        expr = f'(Decimal("{float(fahrenheit):g}") - 32) * 5 / 9 + Decimal("273.15")'
        decimals = 2
    code = f"""from decimal import Decimal, getcontext, ROUND_HALF_UP
getcontext().prec = 50
value = {expr}
print(value.quantize(Decimal("1e-{decimals}"), rounding=ROUND_HALF_UP))
"""
    return {"prompt": prompt, "answer": round_half_up(value, decimals), "code": code, "decimals": decimals}


def nth_prime(rng: random.Random) -> Task:
    n = rng.randint(1000, 15000)
    answer = sieve(200_000)[n - 1]
    prompt = f"What is the {n}th prime number? (The 1st prime is 2.)"
    code = f"""primes = [2]
candidate = 3
while len(primes) < {n}:
    for p in primes:
        if p * p > candidate:
            primes.append(candidate)
            break
        if candidate % p == 0:
            break
    candidate += 2
print(primes[{n} - 1])
"""
    return {"prompt": prompt, "answer": str(answer), "code": code}


def prime_sum(rng: random.Random) -> Task:
    low, high = sorted(rng.sample(range(1000, 400_000), 2))
    answer = sum(p for p in sieve(high) if low <= p <= high)
    prompt = f"What is the sum of all prime numbers p with {low} <= p <= {high}?"
    code = f"""N = {high}
is_prime = bytearray([1]) * (N + 1)
is_prime[0] = is_prime[1] = 0
for p in range(2, int(N ** 0.5) + 1):
    if is_prime[p]:
        is_prime[p * p::p] = bytearray(len(range(p * p, N + 1, p)))
print(sum(p for p in range({low}, N + 1) if is_prime[p]))
"""
    return {"prompt": prompt, "answer": str(answer), "code": code}


def gcd_lcm(rng: random.Random) -> Task:
    if rng.random() < 0.5:
        g = rng.randint(10**3, 10**6)
        numbers = [g * rng.randint(10**5, 10**7) for _ in range(3)]
        answer = numbers[0]
        for x in numbers[1:]:
            answer = egcd(answer, x)[0]
        prompt = f"What is the greatest common divisor of {numbers[0]}, {numbers[1]} and {numbers[2]}?"
        code = f"import math\nprint(math.gcd({numbers[0]}, {numbers[1]}, {numbers[2]}))\n"
    else:
        numbers = rng.sample(range(12, 1000), 5)
        answer = 1
        for x in numbers:
            answer = answer * x // egcd(answer, x)[0]
        prompt = f"What is the least common multiple of {', '.join(map(str, numbers[:-1]))} and {numbers[-1]}?"
        code = f"import math\nprint(math.lcm({', '.join(map(str, numbers))}))\n"
    return {"prompt": prompt, "answer": str(answer), "code": code}


def modpow(rng: random.Random) -> Task:
    a, b, m = rng.randint(2, 10**6), rng.randint(10**9, 10**15), rng.randint(10**6, 10**9)
    result, base, e = 1, a % m, b
    while e:
        if e & 1:
            result = result * base % m
        base = base * base % m
        e >>= 1
    prompt = f"What is the remainder when {a}^{b} is divided by {m}?"
    return {"prompt": prompt, "answer": str(result), "code": f"print(pow({a}, {b}, {m}))\n"}


def digit_sum_power(rng: random.Random) -> Task:
    a, b = rng.randint(2, 99), rng.randint(100, 999)
    answer = sum(int(c) for c in str(a**b))
    prompt = f"What is the sum of the decimal digits of {a}^{b}?"
    return {"prompt": prompt, "answer": str(answer), "code": f"print(sum(int(c) for c in str({a} ** {b})))\n"}


def factorial_digits(rng: random.Random) -> Task:
    n = rng.randint(100, 999)
    value = 1
    for k in range(2, n + 1):
        value *= k
    if rng.random() < 0.5:
        answer = sum(int(c) for c in str(value))
        prompt = f"What is the sum of the decimal digits of {n}! ({n} factorial)?"
        code = f"import math\nprint(sum(int(c) for c in str(math.factorial({n}))))\n"
    else:
        digits = str(value).rstrip("0")
        answer = int(digits[-6:])
        prompt = (f"Write {n}! ({n} factorial) in decimal and remove all its trailing zeros. "
                  "What number do the last six digits of the result form?")
        code = f"import math\nprint(int(str(math.factorial({n})).rstrip('0')[-6:]))\n"
    return {"prompt": prompt, "answer": str(answer), "code": code}


def day_of_week(rng: random.Random) -> Task:
    y, m, d = random_date(rng, 1600, 2400)
    prompt = (f"On what day of the week does {spoken(y, m, d)} fall (proleptic Gregorian calendar)? "
              "Answer with the weekday's name.")
    code = f"import datetime\nprint(datetime.date({y}, {m}, {d}).strftime('%A'))\n"
    return {"prompt": prompt, "answer": zeller_weekday(y, m, d), "code": code}


def days_between(rng: random.Random) -> Task:
    first, second = sorted([random_date(rng, 1800, 2200), random_date(rng, 1800, 2200)])
    answer = days_from_civil(*second) - days_from_civil(*first)
    prompt = (f"How many days are there from {spoken(*first)} to {spoken(*second)}? "
              "(Count the difference of the dates: from a date to the next day is 1 day.)")
    code = (f"import datetime\nprint((datetime.date{tuple(second)} - datetime.date{tuple(first)}).days)\n")
    return {"prompt": prompt, "answer": str(answer), "code": code}


def date_add(rng: random.Random) -> Task:
    start = random_date(rng, 1900, 2100)
    days = rng.randint(100, 30_000)
    later = civil_from_days(days_from_civil(*start) + days)
    prompt = f"What date is {days} days after {spoken(*start)}? Answer in the form YYYY-MM-DD."
    code = f"import datetime\nprint(datetime.date{tuple(start)} + datetime.timedelta(days={days}))\n"
    return {"prompt": prompt, "answer": iso(*later), "code": code}


def combinatorics(rng: random.Random) -> Task:
    kind = rng.choice(["committee", "letters", "paths"])
    if kind == "committee":
        women, men = rng.randint(6, 20), rng.randint(6, 20)
        k = rng.randint(4, min(12, women + men - 2))
        at_least = rng.randint(1, min(k, women) - 1) if min(k, women) > 1 else 1
        answer = sum(choose(women, w) * choose(men, k - w) for w in range(at_least, k + 1))
        prompt = (f"A club has {women} women and {men} men. In how many ways can a committee of {k} people be "
                  f"chosen that includes at least {at_least} women?")
        code = (f"from math import comb\nprint(sum(comb({women}, w) * comb({men}, {k} - w) "
                f"for w in range({at_least}, {k} + 1)))\n")
    elif kind == "letters":
        letters = rng.sample("ABCDEFGHIKLMNOPRSTU", rng.randint(3, 5))
        word = "".join(letter * rng.randint(1, 4) for letter in letters)
        word = "".join(rng.sample(word, len(word)))
        answer = math.factorial(len(word))
        for letter in set(word):
            answer //= math.factorial(word.count(letter))
        prompt = f"How many distinct strings can be formed by rearranging all the letters of {word}?"
        code = f"""from math import factorial
from collections import Counter
word = "{word}"
count = factorial(len(word))
for c in Counter(word).values():
    count //= factorial(c)
print(count)
"""
    else:
        a, b = rng.randint(6, 16), rng.randint(6, 16)
        c, d = rng.randint(1, a - 1), rng.randint(1, b - 1)
        answer = choose(a + b, a) - choose(c + d, c) * choose(a - c + b - d, a - c)
        prompt = (f"A path on the integer grid goes from (0, 0) to ({a}, {b}) using unit steps right (+1, 0) or "
                  f"up (0, +1). How many such paths do not pass through the point ({c}, {d})?")
        code = f"""from functools import lru_cache

@lru_cache(maxsize=None)
def paths(x, y):
    if (x, y) == ({c}, {d}):
        return 0
    if x == 0 and y == 0:
        return 1
    return (paths(x - 1, y) if x else 0) + (paths(x, y - 1) if y else 0)

print(paths({a}, {b}))
"""
    return {"prompt": prompt, "answer": str(answer), "code": code}


def statistics_task(rng: random.Random) -> Task:
    data = [rng.randint(10, 999) for _ in range(rng.randint(12, 25))]
    kind = rng.choice(["mean", "median", "pstdev", "variance"])
    n = len(data)
    mean = Fraction(sum(data), n)
    listing = ", ".join(map(str, data))
    decimals: int | None = 4
    if kind == "mean":
        answer = round_half_up(mean, 4)
        question = "What is the mean of these numbers? Round to 4 decimal places."
        code = f"""from decimal import Decimal, ROUND_HALF_UP
data = [{listing}]
print((Decimal(sum(data)) / len(data)).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))
"""
    elif kind == "median":
        ordered = sorted(data)
        mid = Fraction(ordered[(n - 1) // 2] + ordered[n // 2], 2)
        answer = str(mid.numerator) if mid.denominator == 1 else round_half_up(mid, 1)
        decimals = None
        question = "What is the median of these numbers?"
        code = f"""import statistics
m = statistics.median([{listing}])
print(int(m) if m == int(m) else m)
"""
    elif kind == "pstdev":
        variance = sum((x - mean) ** 2 for x in data) / n
        answer = sqrt_round_half_up(variance, 4)
        question = "What is the population standard deviation of these numbers? Round to 4 decimal places."
        code = f"""from decimal import Decimal, getcontext, ROUND_HALF_UP
from fractions import Fraction
getcontext().prec = 50
data = [{listing}]
mean = Fraction(sum(data), len(data))
var = sum((x - mean) ** 2 for x in data) / len(data)
sd = (Decimal(var.numerator) / Decimal(var.denominator)).sqrt()
print(sd.quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))
"""
    else:
        variance = sum((x - mean) ** 2 for x in data) / (n - 1)
        answer = round_half_up(variance, 4)
        question = "What is the sample variance (dividing by n - 1) of these numbers? Round to 4 decimal places."
        code = f"""from decimal import Decimal, getcontext, ROUND_HALF_UP
from fractions import Fraction
import statistics
getcontext().prec = 50
v = statistics.variance([Fraction(x) for x in [{listing}]])
print((Decimal(v.numerator) / Decimal(v.denominator)).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))
"""
    prompt = f"Consider the {n} numbers: {listing}. {question}"
    task = {"prompt": prompt, "answer": answer, "code": code}
    if decimals is not None:
        task["decimals"] = decimals
    return task


def fibonacci_mod(rng: random.Random) -> Task:
    n, m = rng.randint(10_000, 300_000), rng.randint(10**6, 10**9)
    prompt = (f"Let F(0) = 0, F(1) = 1 and F(k) = F(k-1) + F(k-2). What is F({n}) mod {m}?")
    code = f"""a, b = 0, 1
for _ in range({n}):
    a, b = b, (a + b) % {m}
print(a)
"""
    return {"prompt": prompt, "answer": str(fib_pair(n, m)[0]), "code": code}


def divisors(rng: random.Random) -> Task:
    primes = rng.sample([2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71], 4)
    factors = {p: rng.randint(1, 4) for p in primes}
    while math.prod(p**e for p, e in factors.items()) > 10**10:
        p = max(factors, key=lambda q: q ** factors[q])
        factors[p] = max(1, factors[p] - 1)
        if math.prod(q**e for q, e in factors.items()) > 10**10 and factors[p] == 1:
            del factors[p]
    n = math.prod(p**e for p, e in factors.items())
    if rng.random() < 0.5:
        answer = math.prod(e + 1 for e in factors.values())
        prompt = f"How many positive divisors does {n} have?"
        name, step = "count", "1 if d * d == n else 2"
    else:
        answer = math.prod((p ** (e + 1) - 1) // (p - 1) for p, e in factors.items())
        prompt = f"What is the sum of all positive divisors of {n} (including 1 and {n})?"
        name, step = "total", "d if d * d == n else d + n // d"
    # the oracle walks the divisor pairs d, n // d up to sqrt(n)
    code = f"""n = {n}
{name} = 0
d = 1
while d * d <= n:
    if n % d == 0:
        {name} += {step}
    d += 1
print({name})
"""
    return {"prompt": prompt, "answer": str(answer), "code": code}


def base_conversion(rng: random.Random) -> Task:
    n, base = rng.randint(10**5, 10**9), rng.randint(2, 9)
    digits, x = [], n
    while x:
        x, r = divmod(x, base)
        digits.append(str(r))
    representation = "".join(reversed(digits))
    if rng.random() < 0.5:
        prompt = f"Write the decimal number {n} in base {base}. Give just the digits."
        answer = representation
        code = f"""n, base, digits = {n}, {base}, ""
while n:
    n, r = divmod(n, base)
    digits = str(r) + digits
print(digits)
"""
    else:
        answer = str(sum(int(c) for c in representation))
        prompt = f"Write {n} in base {base}. What is the sum of its base-{base} digits (as a decimal number)?"
        code = f"""n, total = {n}, 0
while n:
    n, r = divmod(n, {base})
    total += r
print(total)
"""
    return {"prompt": prompt, "answer": answer, "code": code}


def collatz(rng: random.Random) -> Task:
    def steps(x: int) -> int:
        count = 0
        while x != 1:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            count += 1
        return count

    if rng.random() < 0.5:
        n = rng.randint(10**5, 10**8)
        prompt = (f"Starting from {n}, repeatedly replace n by n/2 if n is even and by 3n+1 if n is odd. "
                  "How many steps does it take to reach 1?")
        answer = steps(n)
        code = f"""n, count = {n}, 0
while n != 1:
    n = n // 2 if n % 2 == 0 else 3 * n + 1
    count += 1
print(count)
"""
    else:
        limit = rng.randint(2000, 30000)
        answer = max(range(1, limit), key=lambda x: (steps(x), -x))
        prompt = (f"For the Collatz map (n -> n/2 if n is even, 3n+1 if n is odd), which starting number below "
                  f"{limit} takes the most steps to reach 1? If several tie, give the smallest.")
        code = f"""cache = {{1: 0}}
def steps(n):
    path = []
    while n not in cache:
        path.append(n)
        n = n // 2 if n % 2 == 0 else 3 * n + 1
    count = cache[n]
    for m in reversed(path):
        count += 1
        cache[m] = count
    return cache[path[0]] if path else count
best = max(range(1, {limit}), key=lambda x: (steps(x), -x))
print(best)
"""
    return {"prompt": prompt, "answer": str(answer), "code": code}


def linear_system(rng: random.Random) -> Task:
    while True:
        matrix = [[rng.randint(-9, 9) for _ in range(3)] for _ in range(3)]
        (a, b, c), (d, e, f), (g, h, i) = matrix
        if a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g) != 0:
            break
    solution = [rng.randint(-20, 20) for _ in range(3)]
    rhs = [sum(row[k] * solution[k] for k in range(3)) for row in matrix]

    def equation(row: list[int], value: int) -> str:
        text = ""
        for coef, var in zip(row, "xyz"):
            if coef == 0:
                continue
            sign = "-" if coef < 0 else "+"
            magnitude = "" if abs(coef) == 1 else str(abs(coef))
            text += f" {sign} {magnitude}{var}" if text else f"{'-' if coef < 0 else ''}{magnitude}{var}"
        return f"{text} = {value}"

    equations = "; ".join(equation(row, value) for row, value in zip(matrix, rhs))
    prompt = f"Solve the system of equations {equations}. Give the solution as (x, y, z)."
    code = f"""from fractions import Fraction
A = {matrix}
b = {rhs}
M = [[Fraction(v) for v in row] + [Fraction(r)] for row, r in zip(A, b)]
for col in range(3):
    pivot = next(r for r in range(col, 3) if M[r][col] != 0)
    M[col], M[pivot] = M[pivot], M[col]
    for r in range(3):
        if r != col and M[r][col] != 0:
            factor = M[r][col] / M[col][col]
            M[r] = [u - factor * v for u, v in zip(M[r], M[col])]
x, y, z = (M[k][3] / M[k][k] for k in range(3))
print(f"({{x}}, {{y}}, {{z}})")
"""
    return {"prompt": prompt, "answer": f"({solution[0]}, {solution[1]}, {solution[2]})", "code": code}


def inclusion_exclusion(rng: random.Random) -> Task:
    n = rng.randint(10_000, 300_000)
    a, b, c = rng.sample(range(2, 40), 3)

    def lcm(*xs: int) -> int:
        out = 1
        for x in xs:
            out = out * x // egcd(out, x)[0]
        return out

    def count(*xs: int) -> int:
        return n // lcm(*xs)

    either = count(a) + count(b) - count(a, b)
    either_and_c = count(a, c) + count(b, c) - count(a, b, c)
    answer = either - either_and_c
    prompt = (f"How many integers k with 1 <= k <= {n} are divisible by {a} or by {b} (or both), "
              f"but not divisible by {c}?")
    code = f"print(sum(1 for k in range(1, {n} + 1) if (k % {a} == 0 or k % {b} == 0) and k % {c} != 0))\n"
    return {"prompt": prompt, "answer": str(answer), "code": code}


def probability(rng: random.Random) -> Task:
    kind = rng.choice(["coins", "dice", "pairs"])
    if kind == "coins":
        n = rng.randint(10, 40)
        k = rng.randint(n // 3, 2 * n // 3)
        value = Fraction(sum(choose(n, i) for i in range(k, n + 1)), 2**n)
        prompt = (f"A fair coin is flipped {n} times. What is the probability of getting at least {k} heads? "
                  "Give the exact answer as a fraction in lowest terms.")
        code = f"""from fractions import Fraction
from math import comb
print(Fraction(sum(comb({n}, i) for i in range({k}, {n} + 1)), 2 ** {n}))
"""
    elif kind == "dice":
        dice = rng.randint(3, 6)
        total = rng.randint(dice + 2, 6 * dice - 2)
        ways = [1]
        for _ in range(dice):
            new = [0] * (len(ways) + 6)
            for s, w in enumerate(ways):
                for face in range(1, 7):
                    new[s + face] += w
            ways = new
        value = Fraction(ways[total], 6**dice)
        prompt = (f"{dice} fair six-sided dice are rolled. What is the probability that the faces sum to exactly "
                  f"{total}? Give the exact answer as a fraction in lowest terms.")
        code = f"""from fractions import Fraction
from itertools import product
hits = sum(1 for roll in product(range(1, 7), repeat={dice}) if sum(roll) == {total})
print(Fraction(hits, 6 ** {dice}))
"""
    else:
        n, k = rng.randint(20, 80), rng.randint(3, 11)
        residues = [sum(1 for x in range(1, n + 1) if x % k == r) for r in range(k)]
        good = sum(residues[r] * residues[(k - r) % k] for r in range(k)) - sum(
            1 for x in range(1, n + 1) if (2 * x) % k == 0)
        value = Fraction(good // 2, n * (n - 1) // 2)
        prompt = (f"Two different numbers are chosen at random from 1, 2, ..., {n} (all pairs equally likely). "
                  f"What is the probability that their sum is divisible by {k}? Give the exact answer as a "
                  "fraction in lowest terms.")
        code = f"""from fractions import Fraction
from itertools import combinations
pairs = list(combinations(range(1, {n} + 1), 2))
print(Fraction(sum(1 for a, b in pairs if (a + b) % {k} == 0), len(pairs)))
"""
    return {"prompt": prompt, "answer": str(value), "code": code}


def percent_change(rng: random.Random) -> Task:
    changes = [rng.choice([-1, 1]) * Fraction(rng.randint(5, 400), 10) for _ in range(rng.randint(3, 5))]
    factor = Fraction(1)
    for change in changes:
        factor *= 1 + change / 100
    overall = (factor - 1) * 100
    described = ", then ".join(f"{'rises' if c > 0 else 'falls'} by {float(abs(c)):g}%" for c in changes)
    prompt = (f"A stock price {described}. What is the overall percentage change from the starting price? "
              "Give a signed percentage rounded to 2 decimal places, like -3.25%.")
    steps = ", ".join(f'Decimal("{float(c):g}")' for c in changes)
    code = f"""from decimal import Decimal, ROUND_HALF_UP
factor = Decimal(1)
for change in [{steps}]:
    factor *= 1 + change / 100
print(f"{{((factor - 1) * 100).quantize(Decimal('0.01'), rounding=ROUND_HALF_UP)}}%")
"""
    return {"prompt": prompt, "answer": round_half_up(overall, 2) + "%", "code": code, "decimals": 2}


def mod_inverse(rng: random.Random) -> Task:
    p = random_prime(rng, 10**5, 10**9)
    a = rng.randint(2, p - 1)
    inverse = egcd(a, p)[1] % p
    prompt = (f"{p} is prime. Find the integer x with 0 < x < {p} such that {a} * x leaves remainder 1 "
              f"when divided by {p}.")
    return {"prompt": prompt, "answer": str(inverse), "code": f"print(pow({a}, -1, {p}))\n"}


def rates(rng: random.Random) -> Task:
    while True:
        a, b, c = rng.randint(2, 15), rng.randint(2, 15), rng.randint(4, 40)
        net = Fraction(1, a) + Fraction(1, b) - Fraction(1, c)
        if net > 0 and (1 / net).denominator > 1:
            break
    time = 1 / net
    prompt = (f"Pipe A alone fills a tank in {a} hours and pipe B alone in {b} hours, while a drain empties a full "
              f"tank in {c} hours. Starting empty with all three open, how many hours does it take to fill the tank? "
              "Give the exact answer as a fraction in lowest terms.")
    code = f"from fractions import Fraction\nprint(1 / (Fraction(1, {a}) + Fraction(1, {b}) - Fraction(1, {c})))\n"
    return {"prompt": prompt, "answer": str(time), "code": code}


FAMILIES: dict[str, Callable[[random.Random], Task]] = {
    "shopping": shopping, "compound_interest": compound_interest, "loan_payment": loan_payment,
    "unit_conversion": unit_conversion, "nth_prime": nth_prime, "prime_sum": prime_sum, "gcd_lcm": gcd_lcm,
    "modpow": modpow, "digit_sum_power": digit_sum_power, "factorial_digits": factorial_digits,
    "day_of_week": day_of_week, "days_between": days_between, "date_add": date_add,
    "combinatorics": combinatorics, "statistics": statistics_task, "fibonacci_mod": fibonacci_mod,
    "divisors": divisors, "base_conversion": base_conversion, "collatz": collatz,
    "linear_system": linear_system, "inclusion_exclusion": inclusion_exclusion, "probability": probability,
    "percent_change": percent_change, "mod_inverse": mod_inverse, "rates": rates,
}


# ---------------------------------------------------------------------------------------------- driver
def run_solution(code: str) -> str:
    """Run an oracle program the way the python tool would, and return what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<solution>", "exec"), {"__name__": "__main__"})
    return out.getvalue().strip()


def generate(seed: int, per_family: int = PER_FAMILY, verify: bool = True) -> list[dict]:
    records = []
    for family, make in FAMILIES.items():
        seen: set[str] = set()
        index = 0
        attempt = 0
        while index < per_family:
            rng = random.Random(f"toolcall:{seed}:{family}:{attempt}")
            attempt += 1
            task = make(rng)
            if task["prompt"] in seen:
                continue
            seen.add(task["prompt"])
            if verify:
                printed = run_solution(task["code"])
                if printed != task["answer"]:
                    raise AssertionError(f"{family}: solution printed {printed!r}, generator "
                                         f"computed {task['answer']!r}")
            data = {"family": family, "solution_code": task["code"]}
            if "decimals" in task:
                data["decimals"] = task["decimals"]
            records.append({
                "id": f"toolcall-{family}-{index:02d}",
                "prompt": task["prompt"],
                "answer": task["answer"],
                "split": "test" if index >= per_family - TEST_PER_FAMILY else "train",
                "data": data,
            })
            index += 1
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="fail if --out differs from a fresh generation")
    args = parser.parse_args(argv)
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in generate(args.seed))
    counts = {split: text.count(f'"split": "{split}"') for split in ("train", "test")}
    return write_or_check(args.out, text, args.check, f"{len(text.splitlines())} tasks {counts}")


if __name__ == "__main__":
    sys.exit(main())
