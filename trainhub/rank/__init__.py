"""What runs inside each training rank: the runner that executes a bundle's cells, and the
``distributed`` helpers that training code calls. Kept light: every rank imports it."""
