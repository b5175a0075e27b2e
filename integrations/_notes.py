"""Small example notes shared by the examples (synthetic people; no real data)."""

NOTES = [
    "Maria Lopez, born 1984-03-12, booked a flight to Madrid for Monday.",
    "Patient John Smith reported a persistent cough and mild fever since Friday.",
    "Call Aisha Khan at 555-0199 about the unpaid invoice for the kitchen renovation.",
    "Quarterly revenue of the Springfield branch grew by twelve percent.",
    "The hiking trail near Lake Tahoe closes after heavy snowfall.",
    "Dr. Chen prescribed inhaled steroids for Peter Novak's asthma.",
    "Our team in Berlin will present the new budget on Thursday.",
    "Emma Wilson, 42 Elm Street, asked for a refund of her train ticket.",
]
QUERIES = [
    "travel plans to Spain",
    "symptoms of a respiratory infection",
    "company earnings report",
    "outstanding payment for home repairs",
    "who has a persistent cough and fever?",
]
