"""What Anki sees: every id (GUIDs, note-type, field and deck ids), the frozen note types, and the .apkg writer (the only genanki import)."""
