"""redactopt: design, prove and apply local redaction mechanisms for correlated data."""
