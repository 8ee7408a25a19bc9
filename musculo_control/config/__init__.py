"""Configuration: YAML read into frozen dataclasses, checked field by field
(:mod:`musculo_control.config.parser`); what the files hold lives with the parts they configure."""
