"""What the settings read besides the environment: shipped files, and configuration errors a person can act on."""
