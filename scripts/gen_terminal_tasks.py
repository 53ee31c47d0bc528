"""Generate clawgym/envs/terminal/tasks/terminal.jsonl, the bundled Terminal-v0 tasks.

Each task is data: a prompt, a bash ``setup`` (content randomised through ``SEED`` with the helpers
``rand N`` -> $R, ``pick a b c`` -> $P, ``word`` -> $W, ``token`` -> $T), a hidden bash ``check``
(``pass``/``fail``/``check``/``same``/``trim`` helpers; ``$ORIG`` is a pristine copy of the start
state, ``$ANSWER`` the final answer) and an oracle ``solution``. See clawgym/envs/terminal/scoring.py.
Every fifth task is in the ``test`` split, the rest in ``train``.

    python scripts/gen_terminal_tasks.py          # rewrite the JSONL
    python scripts/gen_terminal_tasks.py --check  # fail if the JSONL is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's clawgym, installed or not

from clawgym.core.tasks import write_or_check  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "clawgym" / "envs" / "terminal" / "tasks" / "terminal.jsonl"
TASKS: list[dict] = []


def task(id: str, category: str, prompt: str, setup: str, check: str, solution: str, files: dict | None = None) -> None:
    TASKS.append({"id": id, "category": category, "prompt": prompt.strip(), "setup": setup.strip() + "\n",
                  "check": check.strip() + "\n", "solution": solution.strip() + "\n", "files": files or {}})


def script_task(id: str, category: str, script: str, executable: bool, prompt: str, check: str, solution: str) -> None:
    """A task whose answer is a script the agent writes: the start state is a TODO note, and an executable
    script must have its x bit before anything else is checked."""
    check = f"check executable test -x {script}\n{check}" if executable else check
    task(id, category, prompt, f'echo "write {script}" > TODO', check, solution)


# Deterministic git history: fixed identity and dates, so $ORIG rebuilds the same hashes.
GIT_ENV = r"""
export GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.com GIT_COMMITTER_NAME=dev GIT_COMMITTER_EMAIL=dev@example.com
export GIT_AUTHOR_DATE='2024-01-01T00:00:00Z' GIT_COMMITTER_DATE='2024-01-01T00:00:00Z'
gitc() { git -c init.defaultBranch=main -c commit.gpgsign=false "$@" >/dev/null; }
"""

# ------------------------------------------------------------------------------------------ files
task("files-create-nested", "files",
     "Create the directory `project/src/utils` containing an empty file `__init__.py`, and a file "
     "`project/README.md` whose only line is `# Project NAME`, where NAME is the word in `name.txt`.",
     r"""word; echo "$W" > name.txt""",
     r"""check utils_dir test -d project/src/utils
check init_empty test -f project/src/utils/__init__.py -a ! -s project/src/utils/__init__.py
same readme "# Project $(cat "$ORIG/name.txt")" "$(cat project/README.md 2>/dev/null)"
""",
     r"""mkdir -p project/src/utils && : > project/src/utils/__init__.py
printf '# Project %s\n' "$(cat name.txt)" > project/README.md""")

task("files-rename-ext", "files",
     "Rename every `.txt` file in `docs/` to the same name with the extension `.md`, keeping contents.",
     r"""mkdir -p docs; rand 4; n=$((R + 3)); for i in $(seq $n); do word; token; """
     r"""echo "$T" > "docs/${W}_$i.txt"; done""",
     r"""same no_txt 0 "$(ls docs/*.txt 2>/dev/null | wc -l)"
ok=1; for f in "$ORIG"/docs/*.txt; do b=$(basename "$f" .txt); cmp -s "$f" "docs/$b.md" || ok=0; done
same renamed 1 $ok""",
     r"""for f in docs/*.txt; do mv "$f" "${f%.txt}.md"; done""")

task("files-copy-largest", "files",
     "Copy the largest file in `data/` to `largest.bin` in the work directory.",
     r"""mkdir -p data; for i in 1 2 3 4 5 6; do rand 5000; """
     r"""head -c $((R * 6 + i)) /dev/zero | tr '\0' "$i" > data/part$i.bin; done""",
     r"""big=$(ls -S "$ORIG"/data | head -1)
check copied cmp -s "$ORIG/data/$big" largest.bin
check source_kept test -f "data/$big" """,
     r"""cp "data/$(ls -S data | head -1)" largest.bin""")

task("files-delete-empty", "files",
     "Delete every empty file anywhere under `tree/`. Non-empty files must stay untouched.",
     r"""mkdir -p tree/a/b tree/c; for d in tree tree/a tree/a/b tree/c; do for i in 1 2 3; do rand 3
if [ $R = 0 ]; then : > "$d/empty$i"; else token; echo "$T" > "$d/file$i"; fi; done; done; : > tree/a/b/zero""",
     r"""same no_empty 0 "$(find tree -type f -empty | wc -l)"
ok=1; while read -r f; do cmp -s "$ORIG/$f" "$f" || ok=0; done < <(cd "$ORIG" && find tree -type f ! -empty)
same kept_nonempty 1 $ok""",
     r"""find tree -type f -empty -delete""")

task("files-newest", "files",
     "Write the name (just the file name) of the most recently modified file in `logs/` to `newest.txt`.",
     r"""mkdir -p logs; days=$(seq 1 28 | awk -v s=$SEED 'BEGIN{srand(s)} {print rand() "\t" $0}' | sort | cut -f2 | """
     r"""head -6)
for d in $days; do word; touch -d "2024-02-$(printf %02d $d) 12:00" "logs/$W-$d.log"; done""",
     r"""same newest "$(ls -t "$ORIG"/logs | head -1)" "$(trim newest.txt)" """,
     r"""ls -t logs | head -1 > newest.txt""")

task("files-count-recursive", "files",
     "Count the regular files under `src/` (recursively, any depth) and write the number to `count.txt`.",
     r"""for d in src src/a src/a/b src/c src/c/d/e; do mkdir -p $d; rand 5; for i in $(seq 0 $R); """
     r"""do : > "$d/f$i.py"; done; done""",
     r"""same count "$(find "$ORIG/src" -type f | wc -l)" "$(trim count.txt)" """,
     r"""find src -type f | wc -l > count.txt""")

task("files-symlink-latest", "files",
     "`releases/` holds version directories like `v1.9` and `v1.10`. Create a symbolic link `current` in the "
     "work directory pointing to the highest version (by version order, not alphabetical order).",
     r"""mkdir -p releases; rand 3; maj=$((R + 1)); for i in 1 2 3 4; do rand 14; """
     r"""mkdir -p releases/v$maj.$((R + 1)); done; mkdir -p releases/v$maj.9 releases/v$maj.1$((maj + 1))""",
     r"""best=$(ls "$ORIG/releases" | sort -V | tail -1)
check is_link test -L current
same target "$best" "$(basename "$(readlink -f current 2>/dev/null)")" """,
     r"""ln -sfn "releases/$(ls releases | sort -V | tail -1)" current""")

task("files-dedupe", "files",
     "`photos/` contains files with identical content under different names. Delete duplicates so that each "
     "distinct content remains exactly once, keeping the alphabetically first file name of each group.",
     r"""mkdir -p photos; for i in 1 2 3 4 5 6 7 8 9; do rand 4; c=$R; word; """
     r"""echo "content-$c" > "photos/${W}$i.jpg"; done""",
     r"""exp=$(cd "$ORIG/photos" && for f in $(ls); do echo "$(md5sum < "$f" | cut -c1-32) $f"; done | """
     r"""sort -k1,1 -k2,2 | awk '!seen[$1]++ {print $2}' | sort)
same kept "$exp" "$(ls photos | sort)"
""",
     r"""cd photos && for f in $(ls); do h=$(md5sum < "$f"); if grep -qx "$h" ../.seen 2>/dev/null; then rm "$f"; """
     r"""else echo "$h" >> ../.seen; fi; done; rm -f ../.seen; cd ..""")

task("files-sort-by-ext", "files",
     "Move each file in `inbox/` into a subdirectory of `inbox/` named after its extension "
     "(e.g. `inbox/a.pdf` -> `inbox/pdf/a.pdf`).",
     r"""mkdir -p inbox; for i in $(seq 8); do word; pick pdf png txt csv; echo $i > "inbox/$W$i.$P"; done""",
     r"""same no_loose 0 "$(find inbox -maxdepth 1 -type f | wc -l)"
ok=1; for f in "$ORIG"/inbox/*; do b=$(basename "$f"); cmp -s "$f" "inbox/${b##*.}/$b" || ok=0; done
same moved 1 $ok""",
     r"""for f in inbox/*.*; do [ -f "$f" ] || continue; e=${f##*.}; mkdir -p "inbox/$e"; mv "$f" "inbox/$e/"; done""")

task("files-find-needle", "files",
     "Exactly one file somewhere under `haystack/` contains the word `NEEDLE`. Write its path relative to the "
     "work directory (like `haystack/x/y.txt`) to `found.txt`.",
     r"""for i in $(seq 12); do word; d=haystack/$W; mkdir -p $d; token; echo "$T" > $d/f$i.txt; done
rand 12; f=$(ls -d haystack/*/f$((R + 1)).txt); echo "x NEEDLE y" >> $f""",
     r"""same found "$(cd "$ORIG" && grep -rl NEEDLE haystack)" "$(trim found.txt)" """,
     r"""grep -rl NEEDLE haystack > found.txt""")

task("files-total-size", "files",
     "Write the total size in bytes of all `.dat` files under `store/` (recursively) to `total.txt`.",
     r"""mkdir -p store/x store/y/z; for d in store store/x store/y/z; do for i in 1 2 3; do rand 3000; """
     r"""head -c $R /dev/zero > $d/f$i.dat; rand 100; head -c $R /dev/zero > $d/g$i.bin; done; done""",
     r"""same total "$(find "$ORIG/store" -name '*.dat' -printf '%s\n' | awk '{s+=$1} END {print s+0}')" """
     r""""$(trim total.txt)" """,
     r"""find store -name '*.dat' -printf '%s\n' | awk '{s+=$1} END {print s+0}' > total.txt""")

task("files-flatten", "files",
     "Copy every `.png` file found anywhere under `assets/` into a new flat directory `flat/` "
     "(file names are unique). Leave `assets/` unchanged.",
     r"""k=0; for d in assets/a assets/b/c assets/d; do mkdir -p $d; for i in 1 2; do k=$((k + 1)); word; token; """
     r"""echo $T > "$d/$W$k.png"; echo x > "$d/$W$k.txt"; done; done""",
     r"""exp=$(cd "$ORIG" && find assets -name '*.png' -exec basename {} \; | sort | tr '\n' ' ')
same flat "$exp" "$(ls flat 2>/dev/null | sort | tr '\n' ' ')"
same assets_kept "$(cd "$ORIG" && find assets -type f | sort | md5sum)" "$(find assets -type f | sort | md5sum)" """,
     r"""mkdir -p flat && find assets -name '*.png' -exec cp {} flat/ \;""")

# ------------------------------------------------------------------------------------------ text
task("text-grep-count", "text",
     "Count the lines of `app.log` that contain `ERROR` and write the number to `errors.txt`.",
     r"""for i in $(seq 200); do pick INFO WARN ERROR DEBUG INFO; """
     r"""echo "2024-01-01 10:$((i % 60)):00 $P request $i"; done > app.log""",
     r"""same count "$(grep -c ERROR "$ORIG/app.log")" "$(trim errors.txt)" """,
     r"""grep -c ERROR app.log > errors.txt""")

task("text-unique-ips", "text",
     "Extract the distinct client IP addresses (the first field of each line) of `access.log` and write them "
     "to `ips.txt`, one per line, sorted as `LC_ALL=C sort` sorts them.",
     r"""for i in $(seq 150); do rand 12; a=$R; rand 3; echo "10.0.$R.$a - - [01/Jan/2024] \"GET /p$i HTTP/1.1\" """
     r"""200"; done > access.log""",
     r"""same ips "$(cut -d' ' -f1 "$ORIG/access.log" | LC_ALL=C sort -u)" "$(cat ips.txt 2>/dev/null)" """,
     r"""cut -d' ' -f1 access.log | LC_ALL=C sort -u > ips.txt""")

task("text-sed-replace", "text",
     "In `config.ini`, replace every occurrence of `localhost` with `db.internal`, editing the file in place. "
     "Nothing else may change.",
     r"""for i in $(seq 20); do word; rand 3; if [ $R = 0 ]; then echo "${W}_host = localhost:$((5000 + i))"; """
     r"""else echo "$W = value$i"; fi; done > config.ini; echo "url = http://localhost/localhost" >> config.ini""",
     r"""same replaced "$(sed 's/localhost/db.internal/g' "$ORIG/config.ini" | md5sum)" "$(md5sum < config.ini)" """,
     r"""sed -i 's/localhost/db.internal/g' config.ini""")

task("text-awk-group-sum", "text",
     "`sales.csv` has the header `region,amount`. Write the total amount per region to `totals.txt` as lines "
     "`REGION TOTAL` (one space), sorted by region name.",
     r"""echo region,amount > sales.csv; for i in $(seq 60); do pick north south east west; rand 500; """
     r"""echo "$P,$R" >> sales.csv; done""",
     r"""same totals "$(tail -n +2 "$ORIG/sales.csv" | python3 -c 'import sys,collections
t=collections.Counter()
for l in sys.stdin:
    r,a=l.strip().split(","); t[r]+=int(a)
print("\n".join(f"{r} {t[r]}" for r in sorted(t)))')" "$(cat totals.txt 2>/dev/null)"
""",
     r"""tail -n +2 sales.csv | awk -F, '{t[$1]+=$2} END {for (r in t) print r, t[r]}' | sort > totals.txt""")

task("text-awk-filter-column", "text",
     "`data.tsv` is tab-separated with three columns (no header). For every row whose second column is greater "
     "than 50, write its third column to `col.txt`, one per line, in file order.",
     r"""for i in $(seq 80); do rand 100; b=$R; word; printf 'r%d\t%d\t%s%d\n' $i $b $W $i; done > data.tsv""",
     r"""same column "$(python3 -c 'import sys
for l in open(sys.argv[1]):
    a,b,c=l.rstrip("\n").split("\t")
    if int(b)>50: print(c)' "$ORIG/data.tsv")" "$(cat col.txt 2>/dev/null)"
""",
     r"""awk -F'\t' '$2 > 50 {print $3}' data.tsv > col.txt""")

task("text-jq-filter", "text",
     "`users.json` is a JSON array of objects with `name`, `age` and `active`. Write the names of active users "
     "older than 30 to `names.txt`, one per line, in the order they appear.",
     r"""{ echo '['; for i in $(seq 30); do word; rand 60; a=$((R + 18)); pick true false; s=,; [ $i = 30 ] && s=; """
     r"""echo "{\"name\": \"$W$i\", \"age\": $a, \"active\": $P}$s"; done; echo ']'; } > users.json""",
     r"""same names "$(python3 -c 'import json,sys
print("\n".join(u["name"] for u in json.load(open(sys.argv[1])) if u["active"] and u["age"]>30))' """
     r""""$ORIG/users.json")" "$(cat names.txt 2>/dev/null)"
""",
     r"""jq -r '.[] | select(.active and .age > 30) | .name' users.json > names.txt""")

task("text-jq-transform", "text",
     "`items.json` is an array of objects `{\"id\": int, \"price\": number}`. Write `prices.json`: one JSON object "
     "mapping each id (as a string key) to its price.",
     r"""{ echo '['; for i in $(seq 15); do rand 9000; s=,; [ $i = 15 ] && s=; """
     r"""echo "{\"id\": $((i * 7)), \"price\": $R.5}$s"; done; echo ']'; } > items.json""",
     r"""check valid_json python3 -c 'import json; json.load(open("prices.json"))'
check mapping python3 -c 'import json,os
exp={str(i["id"]): i["price"] for i in json.load(open(os.environ["ORIG"]+"/items.json"))}
assert json.load(open("prices.json"))==exp'
""",
     r"""jq 'map({key: (.id|tostring), value: .price}) | from_entries' items.json > prices.json""")

task("text-top-words", "text",
     "`words.txt` has one word per line. Write the three most frequent words to `top3.txt`, one per line, most "
     "frequent first (there are no ties among the top four).",
     r"""word; a=$W; for i in 1 2 3 4; do word; done; b=$W; word; c=$W; word; d=$W
if [ "$a" = "$b" ] || [ "$a" = "$c" ] || [ "$b" = "$c" ] || [ "$d" = "$a" ] || [ "$d" = "$b" ] || [ "$d" = "$c" ]; """
     r"""then a=onyx b=raven c=tundra d=iris; fi
{ for i in $(seq 20); do echo $a; done; for i in $(seq 15); do echo $b; done; for i in $(seq 10); do echo $c; done; """
     r"""for i in 1 2 3 4 5; do echo $d; done; echo zeta; """
     r"""} | awk -v s=$SEED 'BEGIN{srand(s)} {print rand() "\t" $0}' | sort | cut -f2 > words.txt""",
     r"""same top3 "$(sort "$ORIG/words.txt" | uniq -c | sort -rn | head -3 | awk '{print $2}')" "$(cat top3.txt """
     r"""2>/dev/null)"
""",
     r"""sort words.txt | uniq -c | sort -rn | head -3 | awk '{print $2}' > top3.txt""")

task("text-dedupe-lines", "text",
     "Remove duplicate lines from `list.txt` in place, keeping the first occurrence of each line and the "
     "original order.",
     r"""for i in $(seq 40); do rand 15; echo "item-$R"; done > list.txt""",
     r"""same deduped "$(awk '!seen[$0]++' "$ORIG/list.txt")" "$(cat list.txt)" """,
     r"""awk '!seen[$0]++' list.txt > list.tmp && mv list.tmp list.txt""")

task("text-csv-column", "text",
     "`people.csv` has a header row; one of its columns is named `email` (its position varies). Write all "
     "email values, without the header, to `emails.txt` in file order.",
     r"""cols=(name email city); rand 3; i=$R; t=${cols[$i]}; cols[$i]=${cols[2]}; cols[2]=$t; rand 2; """
     r"""t=${cols[$R]}; cols[$R]=${cols[2]}; cols[2]=$t
(IFS=,; echo "${cols[*]}") > people.csv
for n in $(seq 25); do word; row=(); for c in "${cols[@]}"; do case $c in name) row+=("$W$n");; """
     r"""email) row+=("$W$n@example.org");; city) row+=("city$n");; esac; done; (IFS=,; """
     r"""echo "${row[*]}") >> people.csv; done""",
     r"""same emails "$(python3 -c 'import csv,sys; print("\n".join(r["email"] for r in """
     r"""csv.DictReader(open(sys.argv[1]))))' "$ORIG/people.csv")" "$(cat emails.txt 2>/dev/null)"
""",
     r"""c=$(head -1 people.csv | tr , '\n' | grep -nx email | cut -d: -f1); """
     r"""tail -n +2 people.csv | cut -d, -f$c > emails.txt""")

task("text-uppercase", "text",
     "Write the contents of `shout.txt` converted to upper case to `loud.txt`.",
     r"""for i in $(seq 10); do word; a=$W; word; echo "$a and $W, line $i"; done > shout.txt""",
     r"""same upper "$(tr a-z A-Z < "$ORIG/shout.txt")" "$(cat loud.txt 2>/dev/null)" """,
     r"""tr '[:lower:]' '[:upper:]' < shout.txt > loud.txt""")

task("text-line-range", "text",
     "Write lines 10 to 20 (inclusive) of `book.txt` to `excerpt.txt`.",
     r"""for i in $(seq 50); do token; echo "$i $T"; done > book.txt""",
     r"""same excerpt "$(sed -n 10,20p "$ORIG/book.txt")" "$(cat excerpt.txt 2>/dev/null)" """,
     r"""sed -n '10,20p' book.txt > excerpt.txt""")

task("text-strip-comments", "text",
     "Write `settings.conf` without its comment lines (lines whose first non-blank character is `#`) and "
     "without blank lines to `clean.conf`.",
     r"""for i in $(seq 30); do rand 4; word; case $R in 0) echo "# note $W";; 1) echo "   # indented $W";; """
     r"""2) echo "";; 3) echo "$W=$i # trailing";; esac; done > settings.conf; echo "key=last" >> settings.conf""",
     r"""same clean "$(grep -v -E '^[[:space:]]*(#|$)' "$ORIG/settings.conf")" "$(cat clean.conf 2>/dev/null)" """,
     r"""grep -v -E '^[[:space:]]*(#|$)' settings.conf > clean.conf""")

task("text-longest-line", "text",
     "Write the longest line of `poem.txt` (there is exactly one) to `longest.txt`.",
     r"""for i in $(seq 25); do rand 8; l=""; for j in $(seq 0 $R); do word; l+="$W "; done; echo "$i ${l% }"; """
     r"""done > poem.txt; echo "the very longest line of this poem goes on and on and on and on and on and on and on """
     r"""$SEED" >> poem.txt""",
     r"""same longest "$(awk '{ if (length($0) > m) { m = length($0); """
     r"""l = $0 } } END { print l }' "$ORIG/poem.txt")" "$(cat longest.txt 2>/dev/null)" """,
     r"""awk '{ if (length($0) > m) { m = length($0); l = $0 } } END { print l }' poem.txt > longest.txt""")

task("text-csv-to-json", "text",
     "Convert `inventory.csv` (header `name,qty`) to `inventory.json`: a JSON array of objects "
     "`{\"name\": string, \"qty\": integer}` in file order.",
     r"""echo name,qty > inventory.csv; for i in $(seq 12); do word; rand 100; echo "$W$i,$R" >> inventory.csv; done""",
     r"""check json python3 -c 'import csv,json,os
exp=[{"name":r["name"],"qty":int(r["qty"])} for r in csv.DictReader(open(os.environ["ORIG"]+"/inventory.csv"))]
assert json.load(open("inventory.json"))==exp'
""",
     r"""python3 -c 'import csv,json; json.dump([{"name":r["name"],"qty":int(r["qty"])} for r in """
     r"""csv.DictReader(open("inventory.csv"))], open("inventory.json","w"))'""")

task("text-reverse-lines", "text",
     "Write the lines of `stack.txt` in reverse order (last line first) to `reversed.txt`.",
     r"""for i in $(seq 30); do token; echo "$i:$T"; done > stack.txt""",
     r"""same reversed "$(tac "$ORIG/stack.txt")" "$(cat reversed.txt 2>/dev/null)" """,
     r"""tac stack.txt > reversed.txt""")

task("text-join-files", "text",
     "`names.txt` has lines `ID NAME` and `scores.txt` has lines `ID SCORE`. Write `report.txt` with a line "
     "`NAME SCORE` for every ID present in both files, sorted by NAME.",
     r"""for i in $(seq 20); do rand 3; [ $R = 0 ] || { word; echo "$i $W$i"; }; done > names.txt; """
     r"""for i in $(seq 20); do rand 3; [ $R = 0 ] || { rand 100; echo "$i $R"; }; done > scores.txt""",
     r"""same report "$(python3 -c 'import sys
n=dict(l.split() for l in open(sys.argv[1])); s=dict(l.split() for l in open(sys.argv[2]))
print("\n".join(sorted(f"{n[i]} {s[i]}" for i in n if i in s)))' "$ORIG/names.txt" "$ORIG/scores.txt")" "$(cat """
     r"""report.txt 2>/dev/null)"
""",
     r"""join <(sort -k1,1 names.txt) <(sort -k1,1 scores.txt) | awk '{print $2, $3}' | sort > report.txt""")

task("text-answer-max", "text",
     "`temps.txt` lists one temperature reading (an integer) per line. Find the highest reading and give it "
     "as your final answer (just the number).",
     r"""for i in $(seq 40); do rand 80; echo $((R - 20)); done > temps.txt""",
     r"""same answer "$(sort -n "$ORIG/temps.txt" | tail -1)" "$(echo "$ANSWER" | """
     r"""grep -oE -- '-?[0-9]+' | tail -1)" """,
     r"""sort -n temps.txt | tail -1""")

# ------------------------------------------------------------------------------------------ archives
task("archive-tar-create", "archives",
     "Create a gzip-compressed tar archive `backup.tar.gz` of the directory `site/`; paths inside the archive "
     "must start with `site/`.",
     r"""mkdir -p site/css site/img; for f in index.html about.html css/main.css img/logo.svg; do token; """
     r"""echo "$T" > site/$f; done""",
     r"""check is_gzip_tar tar -tzf backup.tar.gz
x=$(mktemp -d); tar -xzf backup.tar.gz -C "$x" 2>/dev/null
check same_tree diff -r "$ORIG/site" "$x/site"
rm -rf "$x" """,
     r"""tar -czf backup.tar.gz site""")

task("archive-tar-extract", "archives",
     "Extract the archive `bundle.tar.gz` into a new directory `out/` (so its top-level entries end up in `out/`).",
     r"""mkdir -p b/docs; for f in a.txt docs/b.txt docs/c.txt; do token; echo "$T" > b/$f; done; """
     r"""tar -czf bundle.tar.gz -C b .; rm -rf b""",
     r"""x=$(mktemp -d); tar -xzf "$ORIG/bundle.tar.gz" -C "$x"
check extracted diff -r "$x" out
rm -rf "$x" """,
     r"""mkdir -p out && tar -xzf bundle.tar.gz -C out""")

task("archive-zip-create", "archives",
     "Create `notes.zip` containing exactly the `.md` files of `notes/` (stored as `notes/NAME.md`), and no "
     "other files.",
     r"""mkdir -p notes; for i in $(seq 6); do word; token; pick md md txt; echo "$T" > "notes/$W$i.$P"; done""",
     r"""same listing "$(cd "$ORIG" && ls notes/*.md | sort)" "$(unzip -Z1 notes.zip 2>/dev/null | sort)"
ok=1; for f in "$ORIG"/notes/*.md; do [ "$(unzip -p notes.zip "notes/$(basename "$f")" 2>/dev/null)" = "$(cat "$f")" """
     r"""] || ok=0; done
same contents 1 $ok""",
     r"""zip -q notes.zip notes/*.md""")

task("archive-unzip", "archives",
     "Extract `pkg.zip` into the directory `pkg/` and write the number of files it contained to `nfiles.txt`.",
     r"""mkdir -p z/lib z/bin; rand 4; for i in $(seq 0 $((R + 2))); do token; echo "$T" > z/lib/m$i.py; done; """
     r"""echo '#!/bin/sh' > z/bin/run; (cd z && zip -qr ../pkg.zip .); rm -rf z""",
     r"""x=$(mktemp -d); (cd "$x" && unzip -q "$ORIG/pkg.zip")
check extracted diff -r "$x" pkg
same nfiles "$(find "$x" -type f | wc -l)" "$(trim nfiles.txt)"
rm -rf "$x" """,
     r"""mkdir -p pkg && (cd pkg && unzip -q ../pkg.zip) && find pkg -type f | wc -l > nfiles.txt""")

task("archive-gunzip-keep", "archives",
     "Decompress `data.csv.gz` to `data.csv` while keeping `data.csv.gz` as it is.",
     r"""for i in $(seq 100); do rand 1000; echo "$i,$R"; done > data.csv; gzip -n data.csv""",
     r"""check gz_kept cmp -s "$ORIG/data.csv.gz" data.csv.gz
same decompressed "$(gzip -dc "$ORIG/data.csv.gz" | md5sum)" "$(md5sum < data.csv 2>/dev/null)" """,
     r"""gzip -dk data.csv.gz""")

task("archive-count-members", "archives",
     "Write the number of regular files stored in `archive.tar` to `count.txt`.",
     r"""mkdir -p t/a/b t/c; rand 6; for i in $(seq 0 $((R + 3))); do echo $i > t/a/f$i; done; rand 5; """
     r"""for i in $(seq 0 $R); do echo $i > t/c/g$i; done; echo x > t/a/b/deep; tar -cf archive.tar t; rm -rf t""",
     r"""same count "$(tar -tvf "$ORIG/archive.tar" | grep -c '^-')" "$(trim count.txt)" """,
     r"""tar -tvf archive.tar | grep -c '^-' > count.txt""")

task("archive-extract-one", "archives",
     "Extract only `config/app.yaml` from `release.tar.gz` into the work directory (so it ends up at "
     "`config/app.yaml`). Do not extract any other member.",
     r"""mkdir -p r/config r/bin; token; echo "secret: $T" > r/config/app.yaml; echo x > r/config/db.yaml; """
     r"""echo y > r/bin/tool; tar -czf release.tar.gz -C r config bin; rm -rf r""",
     r"""same extracted "$(tar -xzOf "$ORIG/release.tar.gz" config/app.yaml)" "$(cat config/app.yaml 2>/dev/null)"
check nothing_else test ! -e config/db.yaml -a ! -e bin/tool""",
     r"""tar -xzf release.tar.gz config/app.yaml""")

task("archive-tar-exclude", "archives",
     "Create `src.tar.gz` containing the directory `src/` but none of its `*.log` files.",
     r"""mkdir -p src/pkg; for f in main.c util.c pkg/x.c; do token; echo "$T" > src/$f; done; """
     r"""echo log > src/build.log; echo log > src/pkg/run.log""",
     r"""same members "$(cd "$ORIG" && find src -type f ! -name '*.log' | sort)" "$(tar -tzf src.tar.gz 2>/dev/null """
     r"""| grep -v '/$' | sort)"
""",
     r"""tar --exclude='*.log' -czf src.tar.gz src""")

task("archive-gzip-each", "archives",
     "Compress every `.log` file in `logs/` individually with gzip, so that `logs/` holds only `.log.gz` files.",
     r"""mkdir -p logs; rand 4; for i in $(seq 0 $((R + 2))); do word; for j in $(seq 20); do echo "$W $j"; """
     r"""done > logs/$W$i.log; done""",
     r"""same only_gz 0 "$(find logs -type f ! -name '*.log.gz' | wc -l)"
ok=1; for f in "$ORIG"/logs/*.log; do [ "$(gzip -dc "logs/$(basename "$f").gz" 2>/dev/null)" = "$(cat "$f")" ] || """
     r"""ok=0; done
same contents 1 $ok""",
     r"""gzip logs/*.log""")

# ------------------------------------------------------------------------------------------ git
task("git-init-commit", "git",
     "Turn `repo/` into a git repository and commit all of its files in one commit with the message "
     "`initial import`.",
     r"""mkdir -p repo/src; for f in README.md src/main.py src/util.py; do token; echo "$T" > repo/$f; done""",
     r"""check is_repo git -C repo rev-parse --git-dir
same message "initial import" "$(git -C repo log -1 --format=%s 2>/dev/null)"
same files "$(cd "$ORIG/repo" && find . -type f | sed 's|^\./||' | sort)" "$(git -C repo ls-files 2>/dev/null | sort)"
same clean "" "$(git -C repo status --porcelain 2>/dev/null)" """,
     r"""cd repo && git init -q && git add -A && git commit -qm "initial import" && cd ..""")

task("git-feature-branch", "git",
     "In the git repository `repo/`, create a branch `feature` from `main` and on it add one commit that creates "
     "`feature.txt` containing the single line `done`. `main` must stay unchanged.",
     GIT_ENV + r"""mkdir repo; cd repo; gitc init; token; echo "$T" > base.txt; gitc add .; gitc commit -m base""",
     r"""same main_unchanged "$(git -C "$ORIG/repo" rev-parse main)" "$(git -C repo rev-parse main 2>/dev/null)"
same feature_file "done" "$(git -C repo show feature:feature.txt 2>/dev/null)"
same one_commit "$(git -C repo rev-parse main)" "$(git -C repo rev-parse feature~1 2>/dev/null)" """,
     r"""cd repo && git checkout -qb feature main && echo done > feature.txt && git add feature.txt && """
     r"""git commit -qm "add feature" && git checkout -q main && cd ..""")

task("git-find-fix", "git",
     "In `repo/`, exactly one commit message contains `[fix]`. Write that commit's full hash to `fix.txt`.",
     GIT_ENV + r"""mkdir repo; cd repo; gitc init; rand 8; k=$((R + 2)); for i in $(seq 12); do token; """
               r"""echo $T > f$i; gitc add .; m="update $i"; [ $i = $k ] && m="[fix] repair $i"; """
               r"""gitc commit -m "$m"; done""",
     r"""same hash "$(git -C "$ORIG/repo" log --format=%H --grep='\[fix\]')" "$(trim fix.txt)" """,
     r"""git -C repo log --format=%H --grep='\[fix\]' > fix.txt""")

task("git-revert", "git",
     "The last commit in `repo/` broke `calc.sh`. Undo it with a new revert commit on top; do not rewrite history.",
     GIT_ENV + r"""mkdir repo; cd repo; gitc init; rand 50; echo "echo $((R + 1))" > calc.sh; gitc add .; """
               r"""gitc commit -m "add calc"; echo x > notes.txt; gitc add .; gitc commit -m notes; """
               r"""echo "exit 1" > calc.sh; gitc commit -am "refactor calc" """,
     r"""o=$(git -C "$ORIG/repo" rev-parse HEAD)
same history_kept "$o" "$(git -C repo rev-parse HEAD~1 2>/dev/null)"
same calc_fixed "$(git -C "$ORIG/repo" show HEAD~1:calc.sh)" "$(git -C repo show HEAD:calc.sh 2>/dev/null)"
same clean "" "$(git -C repo status --porcelain 2>/dev/null)" """,
     r"""git -C repo revert --no-edit HEAD >/dev/null""")

task("git-restore-deleted", "git",
     "A tracked file was deleted from the working tree of `repo/` (the deletion is not committed). Restore it "
     "so that `git status` is clean again.",
     GIT_ENV + r"""mkdir repo; cd repo; gitc init; for i in 1 2 3 4; do word; token; echo $T > $W$i.txt; done; """
               r"""gitc add .; gitc commit -m files; rand 4; rm "$(ls | sed -n "$((R + 1))p")" """,
     r"""same clean "" "$(git -C repo status --porcelain 2>/dev/null)"
same head_kept "$(git -C "$ORIG/repo" rev-parse HEAD)" "$(git -C repo rev-parse HEAD 2>/dev/null)" """,
     r"""git -C repo checkout -- .""")

task("git-count-author", "git",
     "Write the number of commits in `repo/` whose author name is `alice` to `alice.txt`.",
     GIT_ENV + r"""mkdir repo; cd repo; gitc init; for i in $(seq 15); do pick alice bob carol; echo $i > f; """
               r"""gitc add f; GIT_AUTHOR_NAME=$P gitc commit -m "c$i"; done""",
     r"""same count "$(git -C "$ORIG/repo" log --format=%an | grep -cx alice)" "$(trim alice.txt)" """,
     r"""git -C repo log --format=%an | grep -cx alice > alice.txt""")

task("git-ignore", "git",
     "In `repo/`, make git ignore every `*.tmp` file and the `build/` directory by adding a `.gitignore`, and "
     "commit that `.gitignore`. Leave other files as they are.",
     GIT_ENV + r"""mkdir repo; cd repo; gitc init; echo code > main.c; gitc add .; gitc commit -m init; mkdir build; """
               r"""echo o > build/a.o; echo t > x.tmp""",
     r"""check ignores_tmp git -C repo check-ignore -q y.tmp
check ignores_build git -C repo check-ignore -q build/a.o
check not_overbroad test -z "$(git -C repo check-ignore main.c)"
same committed ".gitignore" "$(git -C repo ls-files .gitignore 2>/dev/null)"
same clean "" "$(git -C repo status --porcelain 2>/dev/null)" """,
     r"""cd repo && printf '*.tmp\nbuild/\n' > .gitignore && git add .gitignore && """
     r"""git commit -qm "ignore build output" && cd ..""")

task("git-merge", "git",
     "In `repo/`, merge the branch `topic` into `main` (there are no conflicts) and leave `main` checked out.",
     GIT_ENV + r"""mkdir repo; cd repo; gitc init; echo a > a.txt; gitc add .; gitc commit -m a; """
               r"""gitc checkout -b topic; token; echo $T > topic.txt; gitc add .; gitc commit -m topic; """
               r"""gitc checkout main; echo b > b.txt; gitc add .; gitc commit -m b""",
     r"""check merged git -C repo merge-base --is-ancestor "$(git -C "$ORIG/repo" rev-parse topic)" main
check main_kept git -C repo merge-base --is-ancestor "$(git -C "$ORIG/repo" rev-parse main)" main
same on_main main "$(git -C repo branch --show-current 2>/dev/null)"
same topic_content "$(git -C "$ORIG/repo" show topic:topic.txt)" "$(cat repo/topic.txt 2>/dev/null)" """,
     r"""git -C repo merge -q --no-edit topic""")

task("git-tag-release", "git",
     "In `repo/`, create the tag `v1.0` on the commit whose message is exactly `release`.",
     GIT_ENV + r"""mkdir repo; cd repo; gitc init; rand 5; k=$((R + 2)); for i in $(seq 8); do echo $i > f; """
               r"""gitc add f; m="work $i"; [ $i = $k ] && m=release; gitc commit -m "$m"; done""",
     r"""same tagged "$(git -C "$ORIG/repo" log --format='%H %s' | awk '$2 == "release" && """
     r"""NF == 2 {print $1}')" "$(git -C repo rev-parse 'v1.0^{commit}' 2>/dev/null)" """,
     r"""git -C repo tag v1.0 "$(git -C repo log --format='%H %s' | awk '$2 == "release" && NF == 2 {print $1}')" """)

task("git-stage-partial", "git",
     "In `repo/`, two files are modified. Commit only the change to `keep.txt` with the message `keep`, and leave "
     "the change to `draft.txt` uncommitted in the working tree.",
     GIT_ENV + r"""mkdir repo; cd repo; gitc init; echo 1 > keep.txt; echo 1 > draft.txt; gitc add .; """
               r"""gitc commit -m init; token; echo $T >> keep.txt; token; echo $T >> draft.txt""",
     r"""same message keep "$(git -C repo log -1 --format=%s 2>/dev/null)"
same keep_committed "$(cat "$ORIG/repo/keep.txt")" "$(git -C repo show HEAD:keep.txt 2>/dev/null)"
same draft_not_committed 1 "$(git -C repo show HEAD:draft.txt 2>/dev/null)"
same draft_still_modified " M draft.txt" "$(git -C repo status --porcelain 2>/dev/null)" """,
     r"""cd repo && git add keep.txt && git commit -qm keep && cd ..""")

# ------------------------------------------------------------------------------------------ scripting
script_task("py-sum-stdin", "scripting", "sum.py", False,
            "Write a Python script `sum.py` that reads integers from standard input (one per line, possibly negative) "
            "and prints their sum.",
            r"""nums=$(for i in $(seq 20); do echo $(( (SEED * i * 7919) % 1000 - 400 )); done)
same sum "$(echo "$nums" | awk '{s+=$1} END {print s}')" "$(echo "$nums" | timeout 10 python3 sum.py 2>/dev/null)"
same empty_ok 0 "$(printf '' | timeout 10 python3 sum.py 2>/dev/null)" """,
            r"""printf 'import sys\nprint(sum(int(l) for l in sys.stdin if l.strip()))\n' > sum.py""")

script_task("sh-greet-args", "scripting", "greet.sh", True,
     "Write an executable bash script `greet.sh` that prints `Hello, NAME!` on its own line for each "
     "command-line argument NAME, in order.",
     r"""w="w$SEED"
same greets "$(printf 'Hello, %s!\n' "$w" "two words" x)" "$(timeout 10 ./greet.sh "$w" "two words" x 2>/dev/null)" """,
     r"""printf '#!/bin/bash\nfor n in "$@"; do echo "Hello, $n!"; done\n' > greet.sh && chmod +x greet.sh""")

script_task("sh-isprime", "scripting", "isprime.sh", True,
            "Write an executable script `isprime.sh` that takes one integer N (N >= 2) and exits with status 0 if N is "
            "prime and 1 otherwise.",
            r"""ok=1; for n in 2 3 4 9 17 21 97 $((SEED % 500 + 2)) 7919 7917; do
  exp=$(python3 -c "import sys; n=int(sys.argv[1]); print(0 if all(n % d for d in range(2, int(n**0.5) + 1)) else """
            r"""1)" $n)
  timeout 10 ./isprime.sh $n >/dev/null 2>&1; got=$?; [ "$got" = "$exp" ] || ok=0; done
same verdicts 1 $ok""",
            r"""cat > isprime.sh <<'EOF'
#!/bin/bash
n=$1; for ((d = 2; d * d <= n; d++)); do (( n % d == 0 )) && exit 1; done; exit 0
EOF
chmod +x isprime.sh""")

task("py-fix-mean", "scripting",
     "`stats.py` should print the mean of the numbers in `nums.txt` rounded to 2 decimals (like `12.35`), but it "
     "has a bug. Fix `stats.py` so that `python3 stats.py` prints the right value.",
     r"""for i in $(seq 15); do rand 1000; echo $R; done > nums.txt""",
     r"""same mean "$(python3 -c 'v=[int(l) for l in open("nums.txt")]; """
     r"""print(f"{sum(v)/len(v):.2f}")')" "$(timeout 10 python3 stats.py 2>/dev/null)"
check nums_kept cmp -s "$ORIG/nums.txt" nums.txt""",
     r"""sed -i 's|/ (len(values) + 1)|/ len(values)|' stats.py""",
     files={"stats.py": "values = [int(line) for line in open(\"nums.txt\")]\nmean = sum(values) / (len(values) + 1)\n"
                        "print(f\"{mean:.2f}\")\n"})

task("sh-capture-exit", "scripting",
     "Run `./mystery.sh`. Save what it prints on standard output to `out.txt` and its exit status to `code.txt`.",
     r"""rand 200; c=$((R + 2)); token; printf '#!/bin/bash\necho "%s"\necho noise >&2\nexit %d\n' "$T" $c > """
     r"""mystery.sh; chmod +x mystery.sh""",
     r"""exp_out=$(bash "$ORIG/mystery.sh" 2>/dev/null); exp_code=$?
same stdout "$exp_out" "$(cat out.txt 2>/dev/null)"
same code "$exp_code" "$(trim code.txt)" """,
     r"""./mystery.sh > out.txt; echo $? > code.txt""")

task("sh-env-file", "scripting",
     "Create `env.sh` so that `source env.sh` exports `APP_MODE=production` and puts the directory `bin` of the "
     "work directory (as an absolute path) at the front of `PATH`. `bin/` contains a tool `hello`.",
     r"""mkdir -p bin; token; printf '#!/bin/sh\necho %s\n' "$T" > bin/hello; chmod +x bin/hello""",
     r"""same app_mode production "$(bash -c 'source ./env.sh >/dev/null 2>&1; echo "$APP_MODE"')"
same tool_on_path "$(sh "$ORIG/bin/hello")" "$(cd / && bash -c "source '$WORK/env.sh' >/dev/null 2>&1; """
     r"""hello" 2>/dev/null)" """,
     r"""printf 'export APP_MODE=production\nexport PATH="%s/bin:$PATH"\n' "$PWD" > env.sh""")

task("sh-line-counts", "scripting",
     "For each `.txt` file in `in/`, create `out/NAME.len` (NAME without `.txt`) containing the number of lines of "
     "that file.",
     r"""mkdir -p in; rand 4; for i in $(seq 0 $((R + 2))); do word; rand 30; seq $R > in/$W$i.txt; done""",
     r"""ok=1; for f in "$ORIG"/in/*.txt; do b=$(basename "$f" .txt); """
     r"""[ "$(wc -l < "$f")" = "$(trim "out/$b.len")" ] || ok=0; done
same counts 1 $ok
same no_extra "$(ls "$ORIG/in" | wc -l)" "$(ls out 2>/dev/null | wc -l)" """,
     r"""mkdir -p out && for f in in/*.txt; do b=$(basename "$f" .txt); wc -l < "$f" > "out/$b.len"; done""")

task("py-json-merge", "scripting",
     "Merge the JSON objects in `parts/*.json` into one object in `merged.json`. Process the files in "
     "alphabetical order; a key in a later file overrides the same key from an earlier one.",
     r"""mkdir -p parts; for p in a b c d; do { echo '{'; for i in 1 2 3; do rand 6; s=,; [ $i = 3 ] && s=; """
     r"""echo "\"k$R\": \"$p$i\"$s"; done; echo '}'; } > parts/$p.json; done""",
     r"""check merged python3 -c 'import glob,json,os
exp={}
for f in sorted(glob.glob(os.environ["ORIG"]+"/parts/*.json")): exp.update(json.load(open(f)))
assert json.load(open("merged.json"))==exp'
""",
     r"""jq -s 'reduce .[] as $o ({}; . + $o)' $(ls parts/*.json | sort) > merged.json""")

task("sh-makefile", "scripting",
     "Write a `Makefile` whose target `build` creates `build/out.txt` by concatenating `src/*.txt` in name order. "
     "Running `make build` must work from a clean state.",
     r"""mkdir -p src; for i in 3 1 2 5; do token; echo "$i $T" > src/part$i.txt; done""",
     r"""rm -rf build
check make_runs timeout 20 make -s build
same output "$(cat "$ORIG"/src/part1.txt "$ORIG"/src/part2.txt "$ORIG"/src/part3.txt "$ORIG"/src/part5.txt)" "$(cat """
     r"""build/out.txt 2>/dev/null)" """,
     r"""printf 'build:\n\tmkdir -p build\n\tcat $$(ls src/*.txt | sort) > build/out.txt\n' > Makefile""")

script_task("sh-fib", "scripting", "fib.sh", True,
            "Write an executable script `fib.sh` that prints the N-th Fibonacci number for its argument N "
            "(F(0)=0, F(1)=1, 0 <= N <= 90).",
            r"""ok=1; for n in 0 1 2 10 $((SEED % 60 + 20)) 90; do exp=$(python3 -c "a,b=0,1
for _ in range($n): a,b=b,a+b
print(a)"); [ "$(timeout 10 ./fib.sh $n 2>/dev/null)" = "$exp" ] || ok=0; done
same values 1 $ok""",
            r"""printf '#!/bin/bash\na=0; b=1\nfor ((i = 0; i < $1; i++)); do t=$((a + b)); a=$b; b=$t; """
            r"""done\necho $a\n' > fib.sh && chmod +x fib.sh""")

script_task("py-word-freq-json", "scripting", "wordfreq.py", False,
     "Write `wordfreq.py` which prints, as a JSON object, how often each word occurs in the file given as its "
     "first argument (words are separated by whitespace; keep case).",
     r"""t=$(mktemp); for i in $(seq 30); do echo "w$(( (SEED + i * i) % 7 )) x$(( i % 3 ))"; done > "$t"
check counts python3 -c 'import collections,json,subprocess,sys
out=subprocess.run(["python3","wordfreq.py",sys.argv[1]],capture_output=True,text=True,timeout=10).stdout
assert json.loads(out)==dict(collections.Counter(open(sys.argv[1]).read().split()))' "$t"
rm -f "$t" """,
     r"""printf 'import collections, json, """
     r"""sys\nprint(json.dumps(collections.Counter(open(sys.argv[1]).read().split())))\n' > wordfreq.py""")

task("py-rename-pattern", "scripting",
     "Rename the files `img_N.jpeg` in `pics/` to `photo-NNN.jpg`, where NNN is N zero-padded to 3 digits "
     "(e.g. `img_7.jpeg` -> `photo-007.jpg`).",
     r"""mkdir -p pics; for i in $(seq 6); do rand 99; n=$((R * 10 + i)); token; echo $T > pics/img_$n.jpeg; done""",
     r"""ok=1; for f in "$ORIG"/pics/img_*.jpeg; do n=$(basename "$f" .jpeg); n=${n#img_}; """
     r"""cmp -s "$f" "pics/$(printf 'photo-%03d.jpg' $n)" || ok=0; done
same renamed 1 $ok
same none_left 0 "$(ls pics/img_* 2>/dev/null | wc -l)" """,
     r"""for f in pics/img_*.jpeg; do n=$(basename "$f" .jpeg); """
     r"""mv "$f" "pics/$(printf 'photo-%03d.jpg' ${n#img_})"; done""")

# ------------------------------------------------------------------------------------------ sqlite
SHOP = (r"""sqlite3 shop.db 'CREATE TABLE orders(id INTEGER PRIMARY KEY, customer TEXT, amount INTEGER);'
{ echo 'BEGIN;'; for i in $(seq 40); do pick ann ben cat dan eve; rand 250; """
        r"""echo "INSERT INTO orders VALUES($i,'$P',$R);"; done; echo 'COMMIT;'; } | sqlite3 shop.db""")

task("sql-count", "sqlite",
     "`shop.db` (sqlite) has a table `orders(id, customer, amount)`. Write the number of orders with an amount "
     "greater than 100 to `big.txt`.",
     SHOP,
     r"""same count "$(sqlite3 "$ORIG/shop.db" 'SELECT COUNT(*) FROM orders WHERE amount > 100')" "$(trim big.txt)" """,
     r"""sqlite3 shop.db 'SELECT COUNT(*) FROM orders WHERE amount > 100' > big.txt""")

task("sql-top-customer", "sqlite",
     "`shop.db` has a table `orders(id, customer, amount)`. Write the name of the customer with the highest total "
     "amount to `top.txt`.",
     SHOP + r"""
echo "INSERT INTO orders VALUES(100,'zed',5000);" | sqlite3 shop.db""",
     r"""same top "$(sqlite3 "$ORIG/shop.db" 'SELECT customer FROM orders GROUP BY customer ORDER BY SUM(amount) """
     r"""DESC LIMIT 1')" "$(trim top.txt)" """,
     r"""sqlite3 shop.db 'SELECT customer FROM orders GROUP BY customer ORDER BY SUM(amount) DESC LIMIT 1' > top.txt""")

task("sql-create-load", "sqlite",
     "Create a sqlite database `library.db` with a table `books(id INTEGER PRIMARY KEY, title TEXT, year INTEGER)` "
     "holding every row of `books.csv` (header `title,year`), in file order.",
     r"""echo title,year > books.csv; for i in $(seq 10); do word; a=$W; word; rand 100; """
     r"""echo "$a $W,$((1920 + R))" >> books.csv; done""",
     r"""same rows "$(tail -n +2 "$ORIG/books.csv" | tr , '|')" "$(sqlite3 library.db 'SELECT title, year FROM books """
     r"""ORDER BY id' 2>/dev/null)"
same year_type integer "$(sqlite3 library.db 'SELECT DISTINCT typeof(year) FROM books' 2>/dev/null)" """,
     r"""sqlite3 library.db 'CREATE TABLE books(id INTEGER PRIMARY KEY, title TEXT, year INTEGER);'
tail -n +2 books.csv | while IFS=, read -r t y; do sqlite3 library.db "INSERT INTO books(title, year) VALUES('$t', """
     r"""$y);"; done""")

task("sql-update", "sqlite",
     "In `store.db`, table `products(id, name, category, price)`: increase the price of every product in category "
     "`tools` by 10. Other rows must not change.",
     r"""sqlite3 store.db 'CREATE TABLE products(id INTEGER PRIMARY KEY, name TEXT, category TEXT, price INTEGER);'
for i in $(seq 20); do pick tools garden kitchen; word; rand 90; """
     r"""echo "INSERT INTO products VALUES($i,'$W','$P',$((R + 5)));"; done | sqlite3 store.db""",
     r"""same prices "$(sqlite3 "$ORIG/store.db" "SELECT id, CASE category WHEN 'tools' THEN price + 10 ELSE price """
     r"""END FROM products ORDER BY id")" "$(sqlite3 store.db 'SELECT id, price FROM products ORDER BY """
     r"""id' 2>/dev/null)" """,
     r"""sqlite3 store.db "UPDATE products SET price = price + 10 WHERE category = 'tools'" """)

task("sql-export-csv", "sqlite",
     "Export the table `employees` of `company.db` to `employees.csv`: comma-separated, with a header row of the "
     "column names, rows ordered by `id`.",
     r"""sqlite3 company.db 'CREATE TABLE employees(id INTEGER PRIMARY KEY, name TEXT, dept TEXT, salary INTEGER);'
for i in $(seq 12 -1 1); do word; pick eng ops sales; rand 50; """
     r"""echo "INSERT INTO employees VALUES($((i * 3)),'$W','$P',$((R * 1000 + 30000)));"; done | sqlite3 company.db""",
     r"""same csv "$(sqlite3 -header -csv "$ORIG/company.db" 'SELECT * FROM employees ORDER BY id')" "$(tr -d '\r' < """
     r"""employees.csv 2>/dev/null)" """,
     r"""sqlite3 -header -csv company.db 'SELECT * FROM employees ORDER BY id' > employees.csv""")

task("sql-delete-old", "sqlite",
     "In `logs.db`, delete every row of the table `events(id, ts, msg)` whose `ts` (an ISO date `YYYY-MM-DD`) is "
     "before 2024-01-01. Keep all other rows.",
     r"""sqlite3 logs.db 'CREATE TABLE events(id INTEGER PRIMARY KEY, ts TEXT, msg TEXT);'
for i in $(seq 30); do pick 2023 2024 2025; y=$P; rand 12; m=$(printf %02d $((R + 1))); word; """
     r"""echo "INSERT INTO events VALUES($i,'$y-$m-15','$W');"; done | sqlite3 logs.db""",
     r"""same remaining "$(sqlite3 "$ORIG/logs.db" "SELECT id FROM events WHERE ts >= '2024-01-01' ORDER BY id")" """
     r""""$(sqlite3 logs.db 'SELECT id FROM events ORDER BY id' 2>/dev/null)" """,
     r"""sqlite3 logs.db "DELETE FROM events WHERE ts < '2024-01-01'" """)

task("sql-join", "sqlite",
     "`school.db` has tables `students(id, name)` and `grades(student_id, grade)`. Write `NAME AVG` lines (average "
     "grade rounded to one decimal, e.g. `ann 81.5`) for every student with at least one grade, sorted by name, "
     "to `averages.txt`.",
     r"""sqlite3 school.db 'CREATE TABLE students(id INTEGER PRIMARY KEY, name TEXT); """
     r"""CREATE TABLE grades(student_id INTEGER, grade INTEGER);'
{ for i in $(seq 8); do word; echo "INSERT INTO students VALUES($i,'$W$i');"; done; for i in $(seq 30); do rand 7; """
     r"""s=$((R + 1)); rand 60; echo "INSERT INTO grades VALUES($s,$((R + 40)));"; done; } | sqlite3 school.db""",
     r"""same averages "$(sqlite3 -separator ' ' "$ORIG/school.db" "SELECT name, printf('%.1f', """
     r"""AVG(grade)) FROM students JOIN grades ON grades.student_id = students.id GROUP BY students.id ORDER BY """
     r"""name")" "$(cat averages.txt 2>/dev/null)" """,
     r"""sqlite3 -separator ' ' school.db "SELECT name, printf('%.1f', AVG(grade)) FROM students JOIN grades ON """
     r"""grades.student_id = students.id GROUP BY students.id ORDER BY name" > averages.txt""")

# ------------------------------------------------------------------------------------------ processes & permissions
task("perm-exec-scripts", "permissions",
     "Make every `.sh` file in `bin/` executable by its owner. Do not change the mode of any other file.",
     r"""mkdir -p bin; for i in $(seq 6); do word; pick sh sh txt; echo 'echo hi' > "bin/$W$i.$P"; """
     r"""chmod 644 "bin/$W$i.$P"; done""",
     r"""ok=1; for f in bin/*.sh; do [ -x "$f" ] || ok=0; done; same sh_exec 1 $ok
ok=1; for f in bin/*; do case $f in *.sh) ;; *) [ "$(stat -c %a "$f")" = 644 ] || ok=0;; esac; done; """
     r"""same others_unchanged 1 $ok""",
     r"""chmod u+x bin/*.sh""")

task("perm-private-dir", "permissions",
     "Set the mode of the directory `secrets/` to 700 and of every file inside it to 600.",
     r"""mkdir -p secrets; for i in 1 2 3; do token; echo $T > secrets/key$i; done; chmod 755 secrets; """
     r"""chmod 644 secrets/*""",
     r"""same dir_mode 700 "$(stat -c %a secrets)"
same file_modes 600 "$(stat -c %a secrets/* | sort -u | tr '\n' ' ' | xargs)" """,
     r"""chmod 700 secrets && chmod 600 secrets/*""")

task("perm-world-writable", "permissions",
     "Write the names of the files in `shared/` that are writable by everyone (others have write permission), "
     "sorted, one per line, to `ww.txt`.",
     r"""mkdir -p shared; for i in $(seq 10); do word; f="shared/$W$i"; echo x > "$f"; pick 644 666 664 646 600; """
     r"""chmod $P "$f"; done; echo x > shared/always; chmod 666 shared/always""",
     r"""same list "$(cd "$ORIG/shared" && find . -type f -perm -o+w | sed 's|^\./||' | """
     r"""sort)" "$(cat ww.txt 2>/dev/null)" """,
     r"""(cd shared && find . -type f -perm -o+w | sed 's|^\./||' | sort) > ww.txt""")

task("perm-modes-exact", "permissions",
     "Create a file `private.txt` with mode exactly 640 and a directory `drop/` with mode exactly 1777.",
     r"""echo "modes task" > TODO""",
     r"""same file_mode 640 "$(stat -c %a private.txt 2>/dev/null)"
same dir_mode 1777 "$(stat -c %a drop 2>/dev/null)"
check is_dir test -d drop""",
     r"""touch private.txt && chmod 640 private.txt && mkdir -p drop && chmod 1777 drop""")

task("perm-readonly", "permissions",
     "Make `config.lock` read-only for everyone (mode 444) and write its size in bytes to `size.txt`.",
     r"""rand 900; head -c $((R + 10)) /dev/zero > config.lock; chmod 664 config.lock""",
     r"""same mode 444 "$(stat -c %a config.lock)"
same size "$(stat -c %s "$ORIG/config.lock")" "$(trim size.txt)" """,
     r"""chmod 444 config.lock && stat -c %s config.lock > size.txt""")

task("proc-stop-writer", "processes",
     "A background process keeps appending to `ticker.log`. Stop it (it must no longer be running) and write its "
     "PID to `pid.txt`.",
     r"""cat > ticker.sh <<'EOF'
while :; do date +%s%N >> ticker.log; sleep 0.05; done
EOF
if [ "$PHASE" = setup ]; then nohup setsid bash ticker.sh >/dev/null 2>&1 < /dev/null & echo "HIDDEN TICKER_PID=$!"; """
     r"""sleep 0.1; fi""",
     r"""same pid "$TICKER_PID" "$(trim pid.txt)"
a=$(stat -c %s ticker.log 2>/dev/null); sleep 0.3; b=$(stat -c %s ticker.log 2>/dev/null)
same stopped "$a" "$b" """,
     r"""p=$(pgrep -f 'bash ticker.sh' | head -1); kill $p; echo $p > pid.txt; sleep 0.1""")

script_task("proc-trap-term", "processes", "trap.sh", True,
            "Write an executable script `trap.sh` that runs until it is stopped; "
            "when it receives SIGTERM it must write "
            "`graceful` to the file `stopped.txt` (in the current directory) and exit with status 0.",
            r"""rm -f stopped.txt; ./trap.sh >/dev/null 2>&1 & p=$!; sleep 0.3
check still_running kill -0 $p
kill -TERM $p 2>/dev/null; for i in $(seq 30); do kill -0 $p 2>/dev/null || break; sleep 0.1; done
wait $p; code=$?
same exit_status 0 $code
same wrote_file graceful "$(trim stopped.txt)"
kill -9 $p 2>/dev/null; true""",
            r"""printf '#!/bin/bash\ntrap '"'"'echo graceful > stopped.txt; exit 0'"'"' TERM\nwhile :; """
            r"""do sleep 0.05; done\n' > trap.sh && chmod +x trap.sh""")

task("proc-split-streams", "processes",
     "Run `./pipeline.sh`, saving its standard output to `out.log` and its standard error to `err.log`.",
     r"""token; a=$T; token; printf '#!/bin/bash\nfor i in 1 2 3; do echo "out %s $i"; echo "err %s $i" >&2; """
     r"""done\n' "$a" "$T" > pipeline.sh; chmod +x pipeline.sh""",
     r"""same stdout "$(bash "$ORIG/pipeline.sh" 2>/dev/null)" "$(cat out.log 2>/dev/null)"
same stderr "$(bash "$ORIG/pipeline.sh" 2>&1 >/dev/null)" "$(cat err.log 2>/dev/null)" """,
     r"""./pipeline.sh > out.log 2> err.log""")

task("proc-find-listener-script", "processes",
     "Several helper scripts in `jobs/` are running in the background. Exactly one of them was started with the "
     "argument `--port`. Write that script's file name (e.g. `job3.sh`) to `answer.txt`.",
     r"""mkdir -p jobs; rand 4; k=$((R + 1)); for i in 1 2 3 4; do printf 'while :; do sleep 1; """
     r"""done\n' > jobs/job$i.sh; done
if [ "$PHASE" = setup ]; then for i in 1 2 3 4; do a="--verbose"; [ $i = $k ] && a="--port"; """
     r"""nohup setsid bash jobs/job$i.sh $a >/dev/null 2>&1 < /dev/null & done; sleep 0.1; fi
echo "HIDDEN PORT_JOB=job$k.sh" """,
     r"""same answer "$PORT_JOB" "$(trim answer.txt)" """,
     r"""ps -eo args | grep -- '--port' | grep -o 'job[0-9]*\.sh' | head -1 > answer.txt""")

task("proc-exit-codes", "processes",
     "The directory `checks/` holds several scripts. Run each one and write the names of those that exit with a "
     "non-zero status to `failing.txt`, sorted, one per line.",
     r"""mkdir -p checks; for i in $(seq 7); do rand 3; c=0; [ $R = 0 ] || [ $i = 7 ] && c=$((i + 1)); """
     r"""printf '#!/bin/bash\necho running\nexit %d\n' $c > checks/c$i.sh; chmod +x checks/c$i.sh; done""",
     r"""same failing "$(cd "$ORIG/checks" && for f in *.sh; do bash "$f" >/dev/null 2>&1 || echo "$f"; """
     r"""done | sort)" "$(cat failing.txt 2>/dev/null)" """,
     r"""(cd checks && for f in *.sh; do ./"$f" >/dev/null 2>&1 || echo "$f"; done | sort) > failing.txt""")

task("text-sum-column-answer", "text",
     "`ledger.csv` has the header `date,amount`. Compute the sum of the `amount` column and give it as your final "
     "answer (just the number).",
     r"""echo date,amount > ledger.csv; for i in $(seq 25); do rand 900; """
     r"""echo "2024-03-$(printf %02d $i),$((R - 300))" >> ledger.csv; done""",
     r"""same answer "$(tail -n +2 "$ORIG/ledger.csv" | awk -F, '{s+=$2} END {print s}')" "$(echo "$ANSWER" | """
     r"""grep -oE -- '-?[0-9]+' | tail -1)" """,
     r"""tail -n +2 ledger.csv | awk -F, '{s+=$2} END {print s}'""")

task("files-checksum-verify", "files",
     "`SHA256SUMS` lists checksums for the files in `downloads/`. Exactly one file is corrupted. Write its name to "
     "`bad.txt`.",
     r"""mkdir -p downloads; for i in $(seq 6); do token; echo $T > downloads/file$i.bin; done; """
     r"""(cd downloads && sha256sum *.bin > ../SHA256SUMS); rand 6; echo corrupt >> downloads/file$((R + 1)).bin""",
     r"""same bad "$(cd "$ORIG/downloads" && sha256sum -c ../SHA256SUMS 2>/dev/null | grep FAILED | """
     r"""cut -d: -f1)" "$(trim bad.txt)" """,
     r"""(cd downloads && sha256sum -c ../SHA256SUMS 2>/dev/null | grep FAILED | cut -d: -f1) > bad.txt""")

task("text-sed-swap-fields", "text",
     "Each line of `pairs.txt` is `KEY=VALUE`. Write `swapped.txt` where each line is `VALUE=KEY`, in the same order.",
     r"""for i in $(seq 20); do word; token; echo "$W$i=${T:0:8}"; done > pairs.txt""",
     r"""same swapped "$(awk -F= '{print $2 "=" $1}' "$ORIG/pairs.txt")" "$(cat swapped.txt 2>/dev/null)" """,
     r"""sed -E 's/^([^=]*)=(.*)$/\2=\1/' pairs.txt > swapped.txt""")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail if the bundled JSONL differs from the generator")
    args = parser.parse_args()
    ids = [t["id"] for t in TASKS]
    if len(ids) != len(set(ids)):
        raise SystemExit("duplicate task ids")
    lines = []
    for index, t in enumerate(TASKS):
        record = {"id": t["id"], "prompt": t["prompt"], "split": "test" if index % 5 == 4 else "train",
                  "data": {k: t[k] for k in ("category", "files", "setup", "check", "solution")}}
        lines.append(json.dumps(record, ensure_ascii=False))
    return write_or_check(OUT, "\n".join(lines) + "\n", args.check, f"{len(TASKS)} tasks")


if __name__ == "__main__":
    sys.exit(main())
