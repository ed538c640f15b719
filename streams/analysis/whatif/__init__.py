"""What-if: history re-decided under candidate rules, each difference priced in GPU-hours."""
