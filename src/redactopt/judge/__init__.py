"""The judges: exact leakage (Definition 1), rational certificates, attacks and verification.

Nothing here designs a mechanism; everything a design returns is checked here.
"""
