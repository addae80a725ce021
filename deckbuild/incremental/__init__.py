"""Work a rebuild can skip: the up-to-date fingerprint and the cache of parsed card files and rendered Markdown (.deckbuild-cache/)."""
