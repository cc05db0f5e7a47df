"""What source becomes: each method's events, each class's and module's summary."""
