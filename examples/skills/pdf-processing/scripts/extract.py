"""Prints the text of a PDF, page by page (an example file of a skill)."""
import sys

for path in sys.argv[1:]:
    print(f"would extract the text of {path}")
