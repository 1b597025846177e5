"""Amazon Mechanical Turk: the boto3 client (``api``), qualification requirements and the provider."""
