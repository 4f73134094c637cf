#!/usr/bin/env bash
# Runs a fuzzing campaign (after `cargo +nightly fuzz build`), one target at a time (nice 19), seeds + growing corpus.
#   fuzz/campaign.sh SECONDS TARGET...     (logs: /tmp/fuzz-<target>.log)
# Prints libFuzzer's final stats line per target. Exit status: number of targets that failed.
set -u
cd "$(dirname "$0")"
secs=$1
shift
fails=0
for t in "$@"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    extra=()
    [ "$t" = container ] && extra=(-malloc_limit_mb=1100)
    # The built binary directly (`cargo fuzz run` would rebuild whenever a crate changes).
    dirs=("corpus/$t")
    [ -d "seeds/$t" ] && dirs+=("seeds/$t") # a target may have no committed seeds
    nice -n 19 "target/x86_64-unknown-linux-gnu/release/$t" "${dirs[@]}" \
        -max_total_time="$secs" -timeout=60 -artifact_prefix="artifacts/$t/" -rss_limit_mb=2048 "${extra[@]}" -print_final_stats=1 \
        > "/tmp/fuzz-$t.log" 2>&1 || fails=$((fails + 1))
    echo "== $t: $(grep -E '^#[0-9]+' "/tmp/fuzz-$t.log" | tail -1)"
    grep -E 'stat::number_of_executed_units|stat::new_units_added|ERROR|SUMMARY' "/tmp/fuzz-$t.log" | head -5
done
exit "$fails"
