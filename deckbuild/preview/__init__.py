"""The preview site (every card as Anki renders it, offline), the Chromium launcher its tests share, and the README screenshots."""
