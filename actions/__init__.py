"""Actions: workers that do what triggers ask, once, and emit what they did."""
