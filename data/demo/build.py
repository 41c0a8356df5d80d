"""Builds the shipped demo KG (`demo.nt`) and demo questions (`{train,dev,test}.jsonl`).

The facts below are the source; the files are derived. Gold answers are not typed in: each
question names its topic entity and relation path, and its answers are what walking that
path through the built KG returns (never the topic entity itself, as in MetaQA).

    python -m kgqa.data.demo.build
"""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox

from kgqa.kg import Direction, EmbeddedStore, KnowledgeGraph
from kgqa.kg.paths import answer_names, walk
from kgqa.kg.profiles import FREEBASE_NS
from kgqa.kg.terms import XSD

HERE = Path(__file__).parent
OUT, IN = Direction.OUT, Direction.IN

# film: (release date, directors, writers, genre, language, country, [(actor, character)], based on)
FILMS = {
    "Pulp Fiction": ("1994-10-14", ["Quentin Tarantino"], ["Quentin Tarantino", "Roger Avary"], "Crime", "English",
                     "United States of America", [("John Travolta", "Vincent Vega"), ("Samuel L. Jackson", "Jules Winnfield"), ("Uma Thurman", "Mia Wallace")], None),
    "Jackie Brown": ("1997-12-25", ["Quentin Tarantino"], ["Quentin Tarantino"], "Crime", "English",
                     "United States of America", [("Pam Grier", "Jackie Brown"), ("Samuel L. Jackson", "Ordell Robbie")], None),
    "Kill Bill: Volume 1": ("2003-10-10", ["Quentin Tarantino"], ["Quentin Tarantino"], "Action", "English",
                            "United States of America", [("Uma Thurman", "The Bride")], None),
    "Inception": ("2010-07-16", ["Christopher Nolan"], ["Christopher Nolan"], "Science Fiction", "English",
                  "United Kingdom", [("Leonardo DiCaprio", "Dom Cobb"), ("Tom Hardy", "Eames")], None),
    "Interstellar": ("2014-11-07", ["Christopher Nolan"], ["Jonathan Nolan", "Christopher Nolan"], "Science Fiction", "English",
                     "United States of America", [("Matthew McConaughey", "Cooper"), ("Anne Hathaway", "Amelia Brand")], None),
    "The Dark Knight": ("2008-07-18", ["Christopher Nolan"], ["Jonathan Nolan", "Christopher Nolan"], "Action", "English",
                        "United States of America", [("Christian Bale", "Bruce Wayne"), ("Heath Ledger", "Joker")], None),
    "Oppenheimer": ("2023-07-21", ["Christopher Nolan"], ["Christopher Nolan"], "Drama", "English",
                    "United Kingdom", [("Cillian Murphy", "J. Robert Oppenheimer")], "American Prometheus"),
    "Titanic": ("1997-12-19", ["James Cameron"], ["James Cameron"], "Romance", "English",
                "United States of America", [("Leonardo DiCaprio", "Jack Dawson"), ("Kate Winslet", "Rose DeWitt Bukater")], None),
    "Avatar": ("2009-12-18", ["James Cameron"], ["James Cameron"], "Science Fiction", "English",
               "United States of America", [("Sam Worthington", "Jake Sully"), ("Zoe Saldana", "Neytiri")], None),
    "The Terminator": ("1984-10-26", ["James Cameron"], ["James Cameron", "Gale Anne Hurd"], "Science Fiction", "English",
                       "United States of America", [("Arnold Schwarzenegger", "The Terminator")], None),
    "Amélie": ("2001-04-25", ["Jean-Pierre Jeunet"], ["Jean-Pierre Jeunet", "Guillaume Laurant"], "Comedy", "French",
               "France", [("Audrey Tautou", "Amélie Poulain")], None),
    "Spirited Away": ("2001-07-20", ["Hayao Miyazaki"], ["Hayao Miyazaki"], "Animation", "Japanese",
                      "Japan", [("Rumi Hiiragi", "Chihiro Ogino")], None),
    "My Neighbor Totoro": ("1988-04-16", ["Hayao Miyazaki"], ["Hayao Miyazaki"], "Animation", "Japanese",
                           "Japan", [("Noriko Hidaka", "Satsuki Kusakabe")], None),
    "Parasite": ("2019-05-30", ["Bong Joon-ho"], ["Bong Joon-ho", "Han Jin-won"], "Thriller", "Korean",
                 "South Korea", [("Song Kang-ho", "Kim Ki-taek"), ("Cho Yeo-jeong", "Park Yeon-kyo")], None),
    "Memories of Murder": ("2003-05-02", ["Bong Joon-ho"], ["Bong Joon-ho"], "Crime", "Korean",
                           "South Korea", [("Song Kang-ho", "Park Doo-man")], None),
    "Roma": ("2018-11-21", ["Alfonso Cuarón"], ["Alfonso Cuarón"], "Drama", "Spanish",
             "Mexico", [("Yalitza Aparicio", "Cleodegaria Gutiérrez")], None),
    "Gravity": ("2013-10-04", ["Alfonso Cuarón"], ["Alfonso Cuarón", "Jonás Cuarón"], "Science Fiction", "English",
                "United Kingdom", [("Sandra Bullock", "Ryan Stone"), ("George Clooney", "Matt Kowalski")], None),
    "The Godfather": ("1972-03-24", ["Francis Ford Coppola"], ["Mario Puzo", "Francis Ford Coppola"], "Crime", "English",
                      "United States of America", [("Marlon Brando", "Vito Corleone"), ("Al Pacino", "Michael Corleone")], "The Godfather (novel)"),
    "Apocalypse Now": ("1979-08-15", ["Francis Ford Coppola"], ["John Milius", "Francis Ford Coppola"], "War", "English",
                       "United States of America", [("Martin Sheen", "Benjamin L. Willard"), ("Marlon Brando", "Walter E. Kurtz")], "Heart of Darkness"),
    "Lost in Translation": ("2003-09-12", ["Sofia Coppola"], ["Sofia Coppola"], "Drama", "English",
                            "United States of America", [("Bill Murray", "Bob Harris"), ("Scarlett Johansson", "Charlotte")], None),
    "Jurassic Park": ("1993-06-11", ["Steven Spielberg"], ["Michael Crichton", "David Koepp"], "Adventure", "English",
                      "United States of America", [("Sam Neill", "Alan Grant"), ("Laura Dern", "Ellie Sattler")], "Jurassic Park (novel)"),
    "Schindler's List": ("1993-12-15", ["Steven Spielberg"], ["Steven Zaillian"], "Drama", "English",
                         "United States of America", [("Liam Neeson", "Oskar Schindler")], None),
    "1941": ("1979-12-14", ["Steven Spielberg"], ["Robert Zemeckis", "Bob Gale"], "Comedy", "English",
             "United States of America", [("John Belushi", "Wild Bill Kelso")], None),
    "Crouching Tiger, Hidden Dragon": ("2000-07-06", ["Ang Lee"], ["Wang Hui-ling", "James Schamus"], "Action", "Mandarin Chinese",
                                       "Taiwan", [("Chow Yun-fat", "Li Mu Bai"), ("Michelle Yeoh", "Yu Shu Lien")], None),
    "Life of Pi": ("2012-11-21", ["Ang Lee"], ["David Magee"], "Adventure", "English",
                   "United States of America", [("Suraj Sharma", "Pi Patel")], "Life of Pi (novel)"),
    "Pan's Labyrinth": ("2006-10-11", ["Guillermo del Toro"], ["Guillermo del Toro"], "Fantasy", "Spanish",
                        "Spain", [("Ivana Baquero", "Ofelia")], None),
    "The Shape of Water": ("2017-12-01", ["Guillermo del Toro"], ["Guillermo del Toro", "Vanessa Taylor"], "Fantasy", "English",
                           "United States of America", [("Sally Hawkins", "Elisa Esposito")], None),
}

# person: (date of birth, place of birth, nationality)
PEOPLE = {
    "Quentin Tarantino": ("1963-03-27", "Knoxville", "United States of America"),
    "Christopher Nolan": ("1970-07-30", "London", "United Kingdom"),
    "Jonathan Nolan": ("1976-06-06", "London", "United Kingdom"),
    "James Cameron": ("1954-08-16", "Kapuskasing", "Canada"),
    "Jean-Pierre Jeunet": ("1953-09-03", "Roanne", "France"),
    "Hayao Miyazaki": ("1941-01-05", "Tokyo", "Japan"),
    "Bong Joon-ho": ("1969-09-14", "Daegu", "South Korea"),
    "Alfonso Cuarón": ("1961-11-28", "Mexico City", "Mexico"),
    "Francis Ford Coppola": ("1939-04-07", "Detroit", "United States of America"),
    "Sofia Coppola": ("1971-05-14", "New York City", "United States of America"),
    "Steven Spielberg": ("1946-12-18", "Cincinnati", "United States of America"),
    "Ang Lee": ("1954-10-23", "Pingtung", "Taiwan"),
    "Guillermo del Toro": ("1964-10-09", "Guadalajara", "Mexico"),
    "Leonardo DiCaprio": ("1974-11-11", "Los Angeles", "United States of America"),
    "Uma Thurman": ("1970-04-29", "Boston", "United States of America"),
    "Samuel L. Jackson": ("1948-12-21", "Washington, D.C.", "United States of America"),
    "Kate Winslet": ("1975-10-05", "Reading", "United Kingdom"),
    "Marlon Brando": ("1924-04-03", "Omaha", "United States of America"),
    "Al Pacino": ("1940-04-25", "New York City", "United States of America"),
    "Arnold Schwarzenegger": ("1947-07-30", "Thal", "Austria"),
    "Audrey Tautou": ("1976-08-09", "Beaumont", "France"),
    "Song Kang-ho": ("1967-01-17", "Gimhae", "South Korea"),
    "Liam Neeson": ("1952-06-07", "Ballymena", "United Kingdom"),
    "Christian Bale": ("1974-01-30", "Haverfordwest", "United Kingdom"),
    "Heath Ledger": ("1979-04-04", "Perth", "Australia"),
    "Tom Hardy": ("1977-09-15", "London", "United Kingdom"),
    "Anne Hathaway": ("1982-11-12", "New York City", "United States of America"),
    "Scarlett Johansson": ("1984-11-22", "New York City", "United States of America"),
    "Michelle Yeoh": ("1962-08-06", "Ipoh", "Malaysia"),
    "Cillian Murphy": ("1976-05-25", "Douglas", "Ireland"),
}

# city: country it lies in
CITIES = {
    "Knoxville": "United States of America", "London": "United Kingdom", "Kapuskasing": "Canada",
    "Roanne": "France", "Tokyo": "Japan", "Daegu": "South Korea", "Mexico City": "Mexico",
    "Detroit": "United States of America", "New York City": "United States of America",
    "Cincinnati": "United States of America", "Pingtung": "Taiwan", "Guadalajara": "Mexico",
    "Los Angeles": "United States of America", "Boston": "United States of America",
    "Washington, D.C.": "United States of America", "Reading": "United Kingdom",
    "Omaha": "United States of America", "Thal": "Austria", "Beaumont": "France", "Gimhae": "South Korea",
    "Ballymena": "United Kingdom", "Haverfordwest": "United Kingdom", "Perth": "Australia", "Ipoh": "Malaysia",
    "Douglas": "Ireland", "Paris": "France", "Seoul": "South Korea", "Ottawa": "Canada", "Madrid": "Spain",
    "Taipei": "Taiwan", "Vienna": "Austria", "Canberra": "Australia", "Kuala Lumpur": "Malaysia", "Dublin": "Ireland",
}

# country: (capital, official languages, currency)
COUNTRIES = {
    "United States of America": ("Washington, D.C.", ["English"], "United States dollar"),
    "United Kingdom": ("London", ["English"], "Pound sterling"),
    "France": ("Paris", ["French"], "Euro"),
    "Japan": ("Tokyo", ["Japanese"], "Japanese yen"),
    "South Korea": ("Seoul", ["Korean"], "South Korean won"),
    "Mexico": ("Mexico City", ["Spanish"], "Mexican peso"),
    "Canada": ("Ottawa", ["English", "French"], "Canadian dollar"),
    "Spain": ("Madrid", ["Spanish"], "Euro"),
    "Taiwan": ("Taipei", ["Mandarin Chinese"], "New Taiwan dollar"),
    "Austria": ("Vienna", ["German"], "Euro"),
    "Australia": ("Canberra", ["English"], "Australian dollar"),
    "Malaysia": ("Kuala Lumpur", ["Malay"], "Malaysian ringgit"),
    "Ireland": ("Dublin", ["Irish", "English"], "Euro"),
}

# book: (authors, year of first publication)
BOOKS = {
    "The Godfather (novel)": (["Mario Puzo"], "1969"),
    "Heart of Darkness": (["Joseph Conrad"], "1899"),
    "Jurassic Park (novel)": (["Michael Crichton"], "1990"),
    "Life of Pi (novel)": (["Yann Martel"], "2001"),
    "American Prometheus": (["Kai Bird", "Martin J. Sherwin"], "2005"),
}

# (winner, award, ceremony year, honored for): each an unnamed award-honor CVT node
AWARDS = [
    ("Steven Spielberg", "Academy Award for Best Director", "1994", "Schindler's List"),
    ("James Cameron", "Academy Award for Best Director", "1998", "Titanic"),
    ("Bong Joon-ho", "Academy Award for Best Director", "2020", "Parasite"),
    ("Bong Joon-ho", "Academy Award for Best Original Screenplay", "2020", "Parasite"),
    ("Alfonso Cuarón", "Academy Award for Best Director", "2014", "Gravity"),
    ("Alfonso Cuarón", "Academy Award for Best Director", "2019", "Roma"),
    ("Ang Lee", "Academy Award for Best Director", "2013", "Life of Pi"),
    ("Guillermo del Toro", "Academy Award for Best Director", "2018", "The Shape of Water"),
    ("Christopher Nolan", "Academy Award for Best Director", "2024", "Oppenheimer"),
    ("Quentin Tarantino", "Academy Award for Best Original Screenplay", "1995", "Pulp Fiction"),
    ("Hayao Miyazaki", "Academy Award for Best Animated Feature", "2003", "Spirited Away"),
    ("Francis Ford Coppola", "Academy Award for Best Adapted Screenplay", "1973", "The Godfather"),
    ("Sofia Coppola", "Academy Award for Best Original Screenplay", "2004", "Lost in Translation"),
    ("Marlon Brando", "Academy Award for Best Actor", "1973", "The Godfather"),
    ("Leonardo DiCaprio", "Academy Award for Best Actor", "2016", "The Revenant"),
    ("Cillian Murphy", "Academy Award for Best Actor", "2024", "Oppenheimer"),
]

PARENTS = {"Sofia Coppola": ["Francis Ford Coppola"]}
ALIASES = {"United States of America": ["USA", "United States"], "Quentin Tarantino": ["QT"]}

# (split, question, topic, [(relation, direction), ...])
QUESTIONS = [
    # 1 hop, forward
    ("train", "Who directed Pulp Fiction?", "Pulp Fiction", [("film.film.directed_by", OUT)]),
    ("train", "Who directed Inception?", "Inception", [("film.film.directed_by", OUT)]),
    ("dev", "Who directed Spirited Away?", "Spirited Away", [("film.film.directed_by", OUT)]),
    ("test", "Who directed Parasite?", "Parasite", [("film.film.directed_by", OUT)]),
    ("test", "Who directed the film 1941?", "1941", [("film.film.directed_by", OUT)]),
    ("train", "When was Titanic released?", "Titanic", [("film.film.initial_release_date", OUT)]),
    ("test", "When was the film 1941 released?", "1941", [("film.film.initial_release_date", OUT)]),
    ("train", "What language is Amélie in?", "Amélie", [("film.film.language", OUT)]),
    ("test", "What language is Roma in?", "Roma", [("film.film.language", OUT)]),
    ("train", "What genre is Jurassic Park?", "Jurassic Park", [("film.film.genre", OUT)]),
    ("train", "Where was Quentin Tarantino born?", "Quentin Tarantino", [("people.person.place_of_birth", OUT)]),
    ("test", "Where was Ang Lee born?", "Ang Lee", [("people.person.place_of_birth", OUT)]),
    ("train", "When was Hayao Miyazaki born?", "Hayao Miyazaki", [("people.person.date_of_birth", OUT)]),
    ("dev", "When was Bong Joon-ho born?", "Bong Joon-ho", [("people.person.date_of_birth", OUT)]),
    ("train", "What is the capital of Japan?", "Japan", [("location.country.capital", OUT)]),
    ("test", "What is the capital of Austria?", "Austria", [("location.country.capital", OUT)]),
    ("train", "What is the official language of Mexico?", "Mexico", [("location.country.official_language", OUT)]),
    ("dev", "What are the official languages of Canada?", "Canada", [("location.country.official_language", OUT)]),
    ("train", "What currency is used in France?", "France", [("location.country.currency_used", OUT)]),
    ("test", "What currency is used in Japan?", "Japan", [("location.country.currency_used", OUT)]),
    ("train", "Who wrote the novel Jurassic Park?", "Jurassic Park (novel)", [("book.written_work.author", OUT)]),
    ("dev", "Which country is Kapuskasing in?", "Kapuskasing", [("location.location.containedby", OUT)]),
    ("train", "Who are the parents of Sofia Coppola?", "Sofia Coppola", [("people.person.parents", OUT)]),
    ("train", "Which book is The Godfather based on?", "The Godfather", [("film.film.based_on", OUT)]),
    ("test", "In what year was Heart of Darkness first published?", "Heart of Darkness", [("book.written_work.date_of_first_publication", OUT)]),
    # 1 hop, backward
    ("train", "Which films did James Cameron direct?", "James Cameron", [("film.film.directed_by", IN)]),
    ("dev", "Which films did Christopher Nolan direct?", "Christopher Nolan", [("film.film.directed_by", IN)]),
    ("test", "Which films did Steven Spielberg direct?", "Steven Spielberg", [("film.film.directed_by", IN)]),
    ("train", "Which films were written by Quentin Tarantino?", "Quentin Tarantino", [("film.film.written_by", IN)]),
    ("train", "Which films are in Japanese?", "Japanese", [("film.film.language", IN)]),
    ("test", "Which films were made in South Korea?", "South Korea", [("film.film.country", IN)]),
    ("train", "Who was born in New York City?", "New York City", [("people.person.place_of_birth", IN)]),
    ("dev", "Who was born in London?", "London", [("people.person.place_of_birth", IN)]),
    ("train", "Which films are science fiction?", "Science Fiction", [("film.film.genre", IN)]),
    ("test", "Which books did Michael Crichton write?", "Michael Crichton", [("book.written_work.author", IN)]),
    # 2 hops, through a CVT node
    ("train", "Who starred in Titanic?", "Titanic", [("film.film.starring", OUT), ("film.performance.actor", OUT)]),
    ("dev", "Who acted in Inception?", "Inception", [("film.film.starring", OUT), ("film.performance.actor", OUT)]),
    ("test", "Who starred in The Godfather?", "The Godfather", [("film.film.starring", OUT), ("film.performance.actor", OUT)]),
    ("train", "Which characters appear in Pulp Fiction?", "Pulp Fiction", [("film.film.starring", OUT), ("film.performance.character", OUT)]),
    ("train", "In which films did Leonardo DiCaprio act?", "Leonardo DiCaprio", [("film.performance.actor", IN), ("film.film.starring", IN)]),
    ("test", "In which films did Samuel L. Jackson act?", "Samuel L. Jackson", [("film.performance.actor", IN), ("film.film.starring", IN)]),
    ("train", "Which awards did Bong Joon-ho win?", "Bong Joon-ho", [("award.award_winner.awards_won", OUT), ("award.award_honor.award", OUT)]),
    ("test", "Which awards did Christopher Nolan win?", "Christopher Nolan", [("award.award_winner.awards_won", OUT), ("award.award_honor.award", OUT)]),
    ("train", "For which films did Alfonso Cuarón win awards?", "Alfonso Cuarón", [("award.award_winner.awards_won", OUT), ("award.award_honor.honored_for", OUT)]),
    ("dev", "In what year did Ang Lee win an Academy Award?", "Ang Lee", [("award.award_winner.awards_won", OUT), ("award.award_honor.year", OUT)]),
    ("test", "In which years did Alfonso Cuarón win Academy Awards?", "Alfonso Cuarón", [("award.award_winner.awards_won", OUT), ("award.award_honor.year", OUT)]),
    ("train", "Who won the Academy Award for Best Animated Feature?", "Academy Award for Best Animated Feature", [("award.award_honor.award", IN), ("award.award_winner.awards_won", IN)]),
    # 2 hops, named middle
    ("train", "Where was the director of Parasite born?", "Parasite", [("film.film.directed_by", OUT), ("people.person.place_of_birth", OUT)]),
    ("test", "Where was the director of Amélie born?", "Amélie", [("film.film.directed_by", OUT), ("people.person.place_of_birth", OUT)]),
    ("train", "When was the director of Titanic born?", "Titanic", [("film.film.directed_by", OUT), ("people.person.date_of_birth", OUT)]),
    ("dev", "When was the director of Roma born?", "Roma", [("film.film.directed_by", OUT), ("people.person.date_of_birth", OUT)]),
    ("train", "What languages are the films directed by Ang Lee in?", "Ang Lee", [("film.film.directed_by", IN), ("film.film.language", OUT)]),
    ("test", "When were the films directed by Bong Joon-ho released?", "Bong Joon-ho", [("film.film.directed_by", IN), ("film.film.initial_release_date", OUT)]),
    ("train", "Which country is the birthplace of James Cameron in?", "James Cameron", [("people.person.place_of_birth", OUT), ("location.location.containedby", OUT)]),
    ("dev", "What is the capital of the country where Parasite was made?", "Parasite", [("film.film.country", OUT), ("location.country.capital", OUT)]),
    ("train", "Which other films did the director of Jurassic Park direct?", "Jurassic Park", [("film.film.directed_by", OUT), ("film.film.directed_by", IN)]),
    ("test", "Which other films did the director of Avatar direct?", "Avatar", [("film.film.directed_by", OUT), ("film.film.directed_by", IN)]),
    ("train", "Who wrote the book that Life of Pi is based on?", "Life of Pi", [("film.film.based_on", OUT), ("book.written_work.author", OUT)]),
    ("dev", "Who wrote the book that Oppenheimer is based on?", "Oppenheimer", [("film.film.based_on", OUT), ("book.written_work.author", OUT)]),
    ("train", "What genres are the films written by Jonathan Nolan?", "Jonathan Nolan", [("film.film.written_by", IN), ("film.film.genre", OUT)]),
    ("test", "Which films were directed by people born in Mexico City?", "Mexico City", [("people.person.place_of_birth", IN), ("film.film.directed_by", IN)]),
    # 3 hops
    ("train", "Who directed the films that Uma Thurman acted in?", "Uma Thurman", [("film.performance.actor", IN), ("film.film.starring", IN), ("film.film.directed_by", OUT)]),
    ("test", "Who directed the films that Marlon Brando acted in?", "Marlon Brando", [("film.performance.actor", IN), ("film.film.starring", IN), ("film.film.directed_by", OUT)]),
    ("train", "What currency is used in the country where Hayao Miyazaki was born?", "Hayao Miyazaki", [("people.person.place_of_birth", OUT), ("location.location.containedby", OUT), ("location.country.currency_used", OUT)]),
    ("dev", "What languages are official in the country where Christopher Nolan was born?", "Christopher Nolan", [("people.person.place_of_birth", OUT), ("location.location.containedby", OUT), ("location.country.official_language", OUT)]),
    ("test", "What is the capital of the country where Arnold Schwarzenegger was born?", "Arnold Schwarzenegger", [("people.person.place_of_birth", OUT), ("location.location.containedby", OUT), ("location.country.capital", OUT)]),
    ("train", "Where were the directors of Japanese-language films born?", "Japanese", [("film.film.language", IN), ("film.film.directed_by", OUT), ("people.person.place_of_birth", OUT)]),
    ("dev", "When were the films directed by the parent of Sofia Coppola released?", "Sofia Coppola", [("people.person.parents", OUT), ("film.film.directed_by", IN), ("film.film.initial_release_date", OUT)]),
    ("test", "Who acted in the films directed by Francis Ford Coppola?", "Francis Ford Coppola", [("film.film.directed_by", IN), ("film.film.starring", OUT), ("film.performance.actor", OUT)]),
]


class Minter:
    """Freebase-shaped ids: `m.0dm` + a counter for named topics, `m.0dmc` + a counter for CVT nodes."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        self.cvts = 0

    def named(self, name: str, kind: str = "") -> str:
        """One id per name, except characters: the film "Jackie Brown" and its title character differ."""
        key = f"{kind}:{name}" if kind == "film.film_character" else name
        return self.ids.setdefault(key, f"m.0dm{len(self.ids) + 1:03d}")

    def cvt(self) -> str:
        self.cvts += 1
        return f"m.0dmc{self.cvts:03d}"


def build_triples() -> tuple[list[ox.Triple], Minter]:
    ids = Minter()
    triples: list[ox.Triple] = []
    types: dict[str, str] = {}

    def iri(local: str) -> ox.NamedNode:
        return ox.NamedNode(FREEBASE_NS + local)

    def add(subject: str, relation: str, obj: str | ox.Literal) -> None:
        o = obj if isinstance(obj, ox.Literal) else iri(obj)
        triples.append(ox.Triple(iri(subject), iri(relation), o))

    def entity(name: str, kind: str) -> str:
        mid = ids.named(name, kind)
        if mid not in types:
            types[mid] = kind
            add(mid, "type.object.name", ox.Literal(name, language="en"))
            add(mid, "type.object.type", kind)
            for alias in ALIASES.get(name, []):
                add(mid, "common.topic.alias", ox.Literal(alias, language="en"))
        return mid

    def date(text: str) -> ox.Literal:
        return ox.Literal(text, datatype=ox.NamedNode(XSD + "date"))

    def year(text: str) -> ox.Literal:
        return ox.Literal(text, datatype=ox.NamedNode(XSD + "gYear"))

    for country, (capital, languages, currency) in COUNTRIES.items():
        c = entity(country, "location.country")
        add(c, "location.country.capital", entity(capital, "location.citytown"))
        for language in languages:
            add(c, "location.country.official_language", entity(language, "language.human_language"))
        add(c, "location.country.currency_used", entity(currency, "finance.currency"))
    for city, country in CITIES.items():
        add(entity(city, "location.citytown"), "location.location.containedby", entity(country, "location.country"))
    for person, (born, place, nationality) in PEOPLE.items():
        p = entity(person, "people.person")
        add(p, "people.person.date_of_birth", date(born))
        add(p, "people.person.place_of_birth", entity(place, "location.citytown"))
        add(p, "people.person.nationality", entity(nationality, "location.country"))
    for child, parents in PARENTS.items():
        for parent in parents:
            add(entity(child, "people.person"), "people.person.parents", entity(parent, "people.person"))
    for book, (authors, published) in BOOKS.items():
        b = entity(book, "book.written_work")
        for author in authors:
            add(b, "book.written_work.author", entity(author, "people.person"))
        add(b, "book.written_work.date_of_first_publication", year(published))
    for film, (released, directors, writers, genre, language, country, cast, based_on) in FILMS.items():
        f = entity(film, "film.film")
        add(f, "film.film.initial_release_date", date(released))
        for director in directors:
            add(f, "film.film.directed_by", entity(director, "people.person"))
            add(entity(director, "people.person"), "film.director.film", f)  # Freebase's inverse twin
        for writer in writers:
            add(f, "film.film.written_by", entity(writer, "people.person"))
        add(f, "film.film.genre", entity(genre, "film.film_genre"))
        add(f, "film.film.language", entity(language, "language.human_language"))
        add(f, "film.film.country", entity(country, "location.country"))
        for actor, character in cast:
            performance = ids.cvt()
            add(f, "film.film.starring", performance)
            add(performance, "film.performance.actor", entity(actor, "people.person"))
            add(performance, "film.performance.character", entity(character, "film.film_character"))
            add(performance, "type.object.type", "film.performance")
        if based_on:
            add(f, "film.film.based_on", entity(based_on, "book.written_work"))
    for winner, award, ceremony, film in AWARDS:
        honor = ids.cvt()
        add(entity(winner, "people.person"), "award.award_winner.awards_won", honor)
        add(honor, "award.award_honor.award", entity(award, "award.award"))
        add(honor, "award.award_honor.year", year(ceremony))
        add(honor, "award.award_honor.honored_for", entity(film, "film.film"))
        add(honor, "type.object.type", "award.award_honor")
    return triples, ids


def main() -> None:
    triples, ids = build_triples()
    (HERE / "demo.nt").write_bytes(ox.serialize(sorted(triples, key=str), format=ox.RdfFormat.N_TRIPLES))
    store = EmbeddedStore()
    store.load_file(HERE / "demo.nt", format="ntriples")
    kg = KnowledgeGraph(store, profile="freebase")
    splits: dict[str, list[str]] = {"train": [], "dev": [], "test": []}
    for n, (split, question, topic, path) in enumerate(QUESTIONS):
        mid = ids.ids[topic]
        answers = answer_names(kg, walk(kg, [mid], path))
        if not answers:
            raise SystemExit(f"demo question has no answer in the KG: {question}")
        aliases = {a: ALIASES[a] for a in answers if a in ALIASES}
        row = {
            "id": f"demo-{split}-{n:03d}",
            "question": question,
            "topic_entities": [mid],
            "topic_names": [topic],
            "answers": answers,
            "aliases": aliases,
            "hops": len(path),
            "path": [[relation, direction.value] for relation, direction in path],
        }
        splits[split].append(json.dumps(row, ensure_ascii=False))
    for split, rows in splits.items():
        (HERE / f"{split}.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    print(f"{len(triples)} triples, " + ", ".join(f"{s} {len(r)}" for s, r in splits.items()))


if __name__ == "__main__":
    main()
