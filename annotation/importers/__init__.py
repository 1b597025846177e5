"""Readers of released datasets. The modules here parse and validate files into dataclasses and never
import Django; ``annotation.services.importing`` writes what they return to the database."""
