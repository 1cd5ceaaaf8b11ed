"""What the gateway learns from use: feedback, corrections, reviewed examples, templates, starters, history."""
