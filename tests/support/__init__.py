"""What the test files share: helpers, sample submissions and attacks, and the checkout's root."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]      # the checkout: tests/support/ is two below it
