"""`arela ask` handed to a warm `arela serve` of the same index: where the server listens and
who may ask it (`place`), the messages (`wire`), and the server (`server`)."""
